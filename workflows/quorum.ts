import { ActivityFailure, ApplicationFailure, CancellationScope, isCancellation, sleep } from '@temporalio/workflow';
import { QUORUM_LATE } from '../domain/outcome';

/**
 * Issue 40 item 6: a round's seat calls run to a quorum. Every call is waited for until `quorum` of them have answered;
 * then the rest have the grace (measured from that quorum-th answer) and are cut when it passes, each reported late.
 * A call that answers before its cut keeps its answer, and every call has settled when a round returns, so none
 * changes the panel afterwards. With fewer than `quorum` answers every call is waited for, as without a quorum. A
 * cancellation from outside (the deliberation cancelled) passes through.
 */

/** What became of one call: its result (undefined: it could not answer), or late. */
export type QuorumSettled<T> = { answered: T | undefined } | { late: true };

type Calls<T> = readonly (() => Promise<T | undefined>)[];

/** A seat call its round's grace cut in the worker (activities/quorum-rounds.ts), whether or not wrapped. */
export function isQuorumLate(err: unknown): boolean {
  const failure = err instanceof ActivityFailure ? err.cause : err;
  return failure instanceof ApplicationFailure && failure.type === QUORUM_LATE;
}

/**
 * Every call settled; `onQuorum` once `quorum` have answered while a call is still out (otherwise none is left to be
 * late); a call failing as `isLate` says is late.
 */
function settleAll<T>(
  calls: Calls<T>,
  quorum: number,
  onQuorum: () => void,
  isLate: (err: unknown) => boolean,
): Promise<QuorumSettled<T>[]> {
  let answered = 0;
  let settled = 0;
  return Promise.all(
    calls.map((call) =>
      call().then(
        (value): QuorumSettled<T> => {
          settled += 1;
          if (value !== undefined && ++answered === quorum && settled < calls.length) onQuorum();
          return { answered: value };
        },
        (err: unknown): QuorumSettled<T> => {
          settled += 1;
          if (isLate(err)) return { late: true };
          throw err;
        },
      ),
    ),
  );
}

/**
 * Seat calls as local activities: the grace is a local activity too (`wait`), which cuts the calls still out in the
 * worker; when every call settles first, `release` ends it at once. No local activity is ever cancelled.
 */
export async function untilQuorumInTask<T>(
  calls: Calls<T>,
  quorum: number,
  grace: { wait(): Promise<void>; release(): Promise<void> },
): Promise<QuorumSettled<T>[]> {
  let waiting: Promise<void> | undefined;
  let over = false;
  let settled: QuorumSettled<T>[];
  try {
    settled = await settleAll(
      calls,
      quorum,
      () => {
        waiting = grace.wait().then(() => {
          over = true;
        });
      },
      isQuorumLate,
    );
  } catch (err) {
    // Cancelled from outside: the grace ends with the rest; its own end is not this round's failure.
    await waiting?.catch(() => undefined);
    throw err;
  }
  if (waiting && !over) await grace.release();
  await waiting;
  return settled;
}

/** Seat calls as ordinary activities (a run's questions): the grace is a timer, the cut their cancellation. */
export async function untilQuorumScoped<T>(calls: Calls<T>, quorum: number, graceMs: number): Promise<QuorumSettled<T>[]> {
  const seats = new CancellationScope();
  const timer = new CancellationScope();
  let cut = false;
  try {
    return await seats.run(() =>
      settleAll(
        calls,
        quorum,
        () => {
          timer
            .run(() => sleep(graceMs))
            .then(
              () => {
                cut = true;
                seats.cancel();
              },
              () => undefined,
            );
        },
        (err) => cut && isCancellation(err),
      ),
    );
  } finally {
    timer.cancel();
  }
}
