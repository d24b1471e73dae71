import type { Knex } from 'knex';
import { readAnswerPlace, recordAnswerRow } from '../db/repositories/deliberation-events';
import { storableText } from '../domain/storable-text';
import type { Logger } from '../infra/log';

/** Where the call that writes a watched deliberation's answer streams it (issue 53 item 4): after this step of its request. */
export interface AnswerStream {
  requestId: string;
  step: number;
}

/**
 * Pieces received within this long are stored as one row: a provider's tokens arrive every few milliseconds, and each
 * row is a write, a notification and a read by every stream watching; a reader sees the text at most this much later.
 */
const FLUSH_MS = 50;

export interface AnswerWriter<R extends object> {
  /** The text earlier attempts of this call stored (a retried call, a cut answer given more room): the engine continues it. */
  readonly prefix: string;
  /**
   * This call's result, when an execution of it already returned here (a workflow task run again before its result
   * was recorded): its pieces are the text. The call is not made again; it returns this.
   */
  readonly ended: (R & { text: string }) | undefined;
  /** A piece of the answer, as the engine sent it. */
  onText(delta: string): void;
  /** Stores what is still held; resolves once every piece received is stored, or the writer has stopped. */
  flush(): Promise<void>;
  /**
   * Stores what is held, then the call's result after its pieces. `taken`: another writer of this call (an attempt
   * thought lost, still running) stored a piece at this one's place, so the pieces stored are not this attempt's
   * text: its result must not stand for them.
   */
  end(result: R): Promise<{ taken: boolean }>;
}

/**
 * The answer's pieces as rows (migration 038), in order, each after the ones before it, then the call's result
 * (migration 039). A piece that cannot be stored (zero retention, a database error) stops the writer: the pieces stored
 * stay one unbroken prefix of the answer, and the stream sends the rest with the answer when the call ends. Another
 * writer at its place stops it too, and `end` says so. `call` names the call (not the execution): an execution of a
 * call whose result is stored returns it; any other call at the place goes on after it.
 */
export async function openAnswerWriter<R extends object>(
  db: Knex,
  log: Logger,
  orgId: string,
  target: AnswerStream,
  call: string,
): Promise<AnswerWriter<R>> {
  const { requestId, step } = target;
  const rows = await readAnswerPlace(db, requestId, step);
  const ending = rows.findIndex((r) => r.callResult?.call === call);
  const endedWith = rows[ending]?.callResult?.result as R | undefined;
  const textOf = (upTo: number): string =>
    rows
      .slice(0, upTo)
      .filter((r) => r.callResult === null)
      .map((r) => r.text)
      .join('');
  let part = rows.length;
  let held = '';
  let stopped = false;
  let taken = false;
  let timer: NodeJS.Timeout | undefined;
  let writes = Promise.resolve();
  const write = (record: () => Promise<'stored' | 'unkept' | 'taken'>): void => {
    writes = writes.then(async () => {
      if (stopped) return;
      try {
        const kept = await record();
        stopped = kept !== 'stored';
        taken = kept === 'taken';
      } catch (err) {
        stopped = true;
        log.warn('answer not stored further: its stream sends the rest with the answer', { requestId, step, err });
      }
    });
  };
  const flushHeld = (last: boolean): void => {
    timer = undefined;
    // A high surrogate waits for its pair: stored alone it would become U+FFFD (domain/storable-text.ts).
    const cut = !last && /[\ud800-\udbff]$/.test(held) ? held.length - 1 : held.length;
    const text = held.slice(0, cut);
    held = held.slice(cut);
    if (text.length === 0 || stopped) return;
    const at = part++;
    write(() => recordAnswerRow(db, { orgId, requestId, step, part: at, text: storableText(text) }));
  };
  const flush = async (): Promise<void> => {
    clearTimeout(timer);
    flushHeld(true);
    await writes;
  };
  return {
    prefix: textOf(rows.length),
    ended: endedWith && { ...endedWith, text: textOf(ending) },
    onText: (delta) => {
      if (stopped) return;
      held += delta;
      timer ??= setTimeout(() => flushHeld(false), FLUSH_MS);
    },
    flush,
    end: async (result) => {
      await flush();
      const at = part++;
      write(() => recordAnswerRow(db, { orgId, requestId, step, part: at, text: '', callResult: { call, result } }));
      await writes;
      return { taken };
    },
  };
}
