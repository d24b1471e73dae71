import type { Knex } from 'knex';
import { readAnswerChunks, recordAnswerChunk } from '../db/repositories/deliberation-events';
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

export interface AnswerWriter {
  /** The text earlier attempts of this call stored (a retried call, a cut answer given more room): the engine continues it. */
  readonly prefix: string;
  /** A piece of the answer, as the engine sent it. */
  onText(delta: string): void;
  /**
   * Stores what is still held; resolves once every piece received is stored, or the writer has stopped. `taken`:
   * another writer of this call (an attempt thought lost, still running) stored a piece at this one's place, so the
   * pieces stored are not this attempt's text: its result must not stand for them.
   */
  close(): Promise<{ taken: boolean }>;
}

/**
 * The answer's pieces as rows (migration 038), in order, each after the ones before it. A piece that cannot be stored
 * (zero retention, a database error) stops the writer: the pieces stored stay one unbroken prefix of the answer, and
 * the stream sends the rest with the answer when the call ends. Another writer at its place stops it too, and
 * `close` says so.
 */
export async function openAnswerWriter(db: Knex, log: Logger, orgId: string, target: AnswerStream): Promise<AnswerWriter> {
  const { requestId, step } = target;
  const stored = await readAnswerChunks(db, requestId, step);
  let part = stored.length;
  let held = '';
  let stopped = false;
  let taken = false;
  /** What this writer stored, after `prefix`. */
  let own = '';
  let timer: NodeJS.Timeout | undefined;
  let writes = Promise.resolve();
  const flush = (last: boolean): void => {
    timer = undefined;
    // A high surrogate waits for its pair: stored alone it would become U+FFFD (domain/storable-text.ts).
    const cut = !last && /[\ud800-\udbff]$/.test(held) ? held.length - 1 : held.length;
    const text = held.slice(0, cut);
    held = held.slice(cut);
    if (text.length === 0 || stopped) return;
    const at = part++;
    writes = writes.then(async () => {
      if (stopped) return;
      try {
        const kept = await recordAnswerChunk(db, { orgId, requestId, step, part: at, text: storableText(text) });
        stopped = kept !== 'stored';
        taken = kept === 'taken';
        if (kept === 'stored') own += storableText(text);
      } catch (err) {
        stopped = true;
        log.warn('answer piece not stored: its stream sends the rest with the answer', { requestId, step, part: at, err });
      }
    });
  };
  const prefix = stored.map((c) => c.text).join('');
  return {
    prefix,
    onText: (delta) => {
      if (stopped) return;
      held += delta;
      timer ??= setTimeout(() => flush(false), FLUSH_MS);
    },
    close: async () => {
      clearTimeout(timer);
      flush(true);
      await writes;
      // Another execution of this call may have written after this one's pieces: then what is stored is not its text.
      if (!taken && !stopped && own !== '') {
        const now = (await readAnswerChunks(db, requestId, step)).map((c) => c.text).join('');
        taken = now !== prefix + own;
      }
      return { taken };
    },
  };
}
