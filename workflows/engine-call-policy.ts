import type { ActivityOptions } from '@temporalio/workflow';

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
