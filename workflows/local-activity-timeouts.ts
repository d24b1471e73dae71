import { msToNumber } from '@temporalio/common/lib/time';
import type { ActivityOptions, LocalActivityOptions, RetryPolicy } from '@temporalio/workflow';

/*
 * Every local activity's timeouts come from here, and none sets a start-to-close: Core (SDK 1.24.0) leaves a retried
 * try's start-to-close timer running after the try ends, and it fires regardless — once its worker has stopped, as a
 * panic in the log ("receive half not dropped", docs/testing.md); while a later try of the call still runs, as that
 * try's timeout. A schedule-to-close timer is one per call and ends with it. Lint refuses options written inline.
 */

/**
 * One schedule-to-close over every try `options` allows: each try at its start-to-close and the backoff before each
 * retry (the SDK's defaults where the policy is silent). Each try stays bounded by the activity's own deadline (an
 * engine's, a search's), so every call that ended in time under the per-try limit still does.
 */
export function overAllTries(options: ActivityOptions): LocalActivityOptions {
  return { scheduleToCloseTimeout: allTriesMs(options), retry: options.retry };
}

function allTriesMs({ startToCloseTimeout, retry }: ActivityOptions): number {
  const tries = retry?.maximumAttempts;
  if (!startToCloseTimeout || !tries) throw new Error('a budget over all tries needs a per-try timeout and a bounded number of tries');
  const perTry = msToNumber(startToCloseTimeout);
  const first = msToNumber(retry.initialInterval ?? '1 second');
  const cap = retry.maximumInterval === undefined ? 100 * first : msToNumber(retry.maximumInterval);
  let total = perTry;
  for (let retried = 1; retried < tries; retried++)
    total += Math.min(first * (retry.backoffCoefficient ?? 2) ** (retried - 1), cap) + perTry;
  return total;
}

/**
 * A step that retries until it succeeds (a Postgres write that must not lose a paid answer): no bound on the tries,
 * and a schedule-to-close longer than any outage worth waiting through, since Core requires one of the two timeouts.
 * A try ends with its own I/O: a refused or reset connection fails it at once, a paused database is waited on (as a
 * fresh try would wait too), a dead peer's socket errors when the kernel gives up on it.
 */
export function untilDone(retry: RetryPolicy): LocalActivityOptions {
  return { scheduleToCloseTimeout: '7 days', retry: { ...retry, maximumAttempts: undefined } };
}
