import type { Db } from '../db/knex';
import { eventSubscriber, readDeliberationEvents } from '../db/repositories/deliberation-events';
import type { StoredEvent } from '../domain/deliberation-events';

/**
 * A reader of a deliberation's step events (issue 40 item 2) wakes when Postgres says one was stored (LISTEN/NOTIFY,
 * a few milliseconds after the worker wrote it), and at least this often if a notification is lost (a LISTEN
 * connection that dropped, an API that restarted).
 */
export const EVENT_POLL_MS = 1_000;

/** Waits for the next notification of the request (one already come returns at once), EVENT_POLL_MS, or `stop`. */
export type Wait = () => Promise<void>;

/** Runs `body` while listening for the request's events; `wait` is its way to sleep until something may have changed. */
export async function listening<T>(db: Db, requestId: string, stop: AbortSignal, body: (wait: Wait) => Promise<T>): Promise<T> {
  let pending = false;
  let wake: () => void = () => undefined;
  const unsubscribe = await eventSubscriber(db)(requestId, () => {
    pending = true;
    wake();
  });
  const wait: Wait = async () => {
    if (!pending && !stop.aborted) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, EVENT_POLL_MS);
        function done(): void {
          clearTimeout(timer);
          stop.removeEventListener('abort', done);
          resolve();
        }
        wake = done;
        stop.addEventListener('abort', done);
      });
    }
    pending = false;
    wake = () => undefined;
  };
  try {
    return await body(wait);
  } finally {
    unsubscribe();
  }
}

/**
 * Hands each step event of a deliberation to `onStep` once, in index order, as it is stored, until the deliberation's
 * last index is stored or `stop` aborts (MCP `deliberate`'s progress notifications).
 */
export async function followSteps(
  db: Db,
  requestId: string,
  stop: AbortSignal,
  onStep: (s: StoredEvent & { event: Exclude<StoredEvent['event'], { type: 'ended' }> }) => Promise<void>,
): Promise<void> {
  await listening(db, requestId, stop, async (wait) => {
    let next = 0;
    while (!stop.aborted) {
      const byIndex = new Map((await readDeliberationEvents(db, requestId)).map((s) => [s.index, s]));
      for (let s = byIndex.get(next); s; s = byIndex.get(next)) {
        const { event } = s;
        if (event.type === 'ended') return;
        await onStep({ ...s, event });
        next += 1;
      }
      await wait();
    }
  });
}
