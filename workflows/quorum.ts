import { CancellationScope } from '@temporalio/workflow';

/** What became of one call of a round run to a quorum: its result (undefined: it could not answer), or late. */
export type QuorumSettled<T> = { answered: T | undefined } | { late: true };

/**
 * Issue 40 item 6: runs `calls` together until every one has settled, or until `quorum` of them have answered and
 * `grace` has then run out (it starts at the quorum-th answer); the calls still out are then cancelled, each reported
 * late. A call that answers while its cancellation is on its way keeps its answer: every call has settled when this
 * returns, so none changes the panel afterwards. With fewer than `quorum` answers every call is waited for, as
 * without a quorum. A cancellation from outside (the deliberation cancelled) passes through.
 */
export async function untilQuorum<T>(
  calls: readonly (() => Promise<T | undefined>)[],
  quorum: number,
  grace: () => Promise<void>,
): Promise<QuorumSettled<T>[]> {
  const scope = new CancellationScope();
  const answers: ({ answered: T | undefined } | undefined)[] = calls.map(() => undefined);
  let running: Promise<unknown>[] = [];
  try {
    await scope.run(
      () =>
        new Promise<void>((resolve, reject) => {
          let answered = 0;
          let settled = 0;
          running = calls.map((call, i) =>
            call().then((value) => {
              answers[i] = { answered: value };
              settled += 1;
              if (value !== undefined) answered += 1;
              if (settled === calls.length) resolve();
              else if (value !== undefined && answered === quorum) grace().then(resolve, reject);
            }, reject),
          );
        }),
    );
  } finally {
    // The late calls and the grace, whichever are still out.
    scope.cancel();
  }
  await Promise.allSettled(running);
  return answers.map((a) => a ?? { late: true });
}
