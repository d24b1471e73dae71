import { CancellationScope, sleep } from '@temporalio/workflow';

/**
 * A hedged engine call ("The Tail at Scale"): when the first request is still out after `afterMs`, a duplicate goes
 * out and the first answer wins; the other is cancelled. Engines are heavy-tailed (spec: p50 28.5 s, p99 229 s), so a
 * long chain of calls one after another is bounded by its stragglers. Each hedge costs a duplicate call: about the
 * share of calls slower than `afterMs` (30% at the runs' default of 45 s, 10% at 90 s).
 * Without `afterMs` this is exactly `call(0)`: deliberations do not hedge, and their histories are unchanged.
 */
export async function hedged<T>(call: (attempt: number) => Promise<T>, afterMs: number | undefined): Promise<T> {
  if (afterMs === undefined || afterMs <= 0) return call(0);
  const scope = new CancellationScope();
  try {
    return await scope.run(
      () =>
        new Promise<T>((resolve, reject) => {
          let pending = 1;
          let hedging = false;
          const attempt = (n: number): void => {
            call(n).then(resolve, (err: unknown) => {
              pending -= 1;
              // Before the duplicate is sent a failure is final (the caller's backup logic takes over); after, only the last is.
              if (!hedging || pending === 0) reject(err);
            });
          };
          attempt(0);
          sleep(afterMs).then(
            () => {
              hedging = true;
              pending += 1;
              attempt(1);
            },
            () => undefined,
          );
        }),
    );
  } finally {
    // The loser, a call or the timer, is no longer wanted.
    scope.cancel();
  }
}
