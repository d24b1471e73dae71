import type { ActivityOptions, LocalActivityOptions } from '@temporalio/workflow';
import { overAllTries } from './local-activity-timeouts';

/**
 * Every engine call's activity options (seats, judges, synthesis, a run's baseline and judges): the engine layer's
 * own deadline is 180 s, so a try gets a little more; a worker that dies mid-call is noticed by the missing
 * heartbeat (10 s) and the call retried elsewhere. Transient provider failures (429, 5xx, timeouts) retry with
 * backoff, at most 3 tries per engine; a permanent failure is not retried and the caller moves to a backup instead.
 */
export const ENGINE_CALL: ActivityOptions = {
  startToCloseTimeout: '200 seconds',
  heartbeatTimeout: '10 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '20 seconds',
    maximumAttempts: 3,
    nonRetryableErrorTypes: ['EnginePermanent'],
  },
};

/**
 * The same calls as local activities, run by the worker inside the workflow's own task: no activity task through
 * Temporal's queues, no schedule/start/complete events, one workflow task for a whole deliberation (DESIGN §13). A
 * deliberation's calls run so; a run's questions keep ENGINE_CALL (hedged, heartbeating, their own retries visible).
 * What it trades: a result is recorded when the task completes or heartbeats (every 4 s of a long call, at 80% of the
 * deliberation's 5 s task timeout, starters/deliberation.ts), so a worker that dies loses the calls it finished since
 * (they run again on the worker that takes over after that timeout; the caller is billed once, from the recorded
 * results); and a query waits for that heartbeat. One budget over all tries (local-activity-timeouts.ts): each try
 * stays bounded by the engine layer's own deadline (QUORUM_ENGINE_TIMEOUT_MS, at most 180 s), short of Retry-After
 * waits longer than the 20 s per try that the engine deadline leaves under the 200 s.
 */
export const ENGINE_CALL_LOCAL: LocalActivityOptions = overAllTries(ENGINE_CALL);
