import {
  isCancellation,
  log,
  ParentClosePolicy,
  proxyActivities,
  startChild,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { CallbackActivities, Delivery, RunCallback } from '../activities/callbacks';
import { workflowIds } from '../domain/workflow-ids';

/**
 * A run's completion callback (issue 28 item 6), delivered at least once by a workflow of its own: the run workflow
 * starts it as its last step, after the run's end state is written (the poll shows the end at once), and closes
 * without waiting (ParentClosePolicy ABANDON), so a receiver that is down for hours neither holds the run open nor
 * is cut off when the run closes. Its id derives from the run's, so one run has one delivery.
 */
export interface RunCallbackInput extends RunCallback {
  /** The first retry's wait (the launching API's QUORUM_CALLBACK_RETRY_MS); each next one doubles, up to an hour. */
  retryInitialMs: number;
}

/** Stripe retries for days; the issue bounds a delivery at one day of tries. */
const DELIVERY_DEADLINE = '24 hours';

/** How a signed delivery's attempts are timed and retried: run callbacks and account events alike. */
export function deliveryActivityOptions(retryInitialMs: number): ActivityOptions {
  return {
    // One attempt: the DNS lookup and connection plus the receiver's 10 s to answer (CALLBACK_ATTEMPT_TIMEOUT_MS),
    // with room for a database read; an attempt stuck past this is abandoned and retried.
    startToCloseTimeout: '30 seconds',
    // Every attempt and every wait between them, from the first: past a day the delivery gives up.
    scheduleToCloseTimeout: DELIVERY_DEADLINE,
    retry: {
      initialInterval: retryInitialMs,
      backoffCoefficient: 2,
      // From 10 s, doubling reaches an hour after about 9 tries; hourly after that, some 30 tries in the day.
      maximumInterval: '1 hour',
      nonRetryableErrorTypes: ['callback_refused', 'callback_address_refused'],
    },
  };
}

export async function runCallbackWorkflow(input: RunCallbackInput): Promise<Delivery | { eventId: null; refused: string }> {
  const { deliverRunCallback } = proxyActivities<CallbackActivities>(deliveryActivityOptions(input.retryInitialMs));
  try {
    return await deliverRunCallback({ runId: input.runId, orgId: input.orgId, url: input.url });
  } catch (err) {
    // Refused for good, or a day of tries failed: at least once is the promise, so nothing is left to do but say so.
    if (isCancellation(err)) throw err;
    const reason = err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
    log.warn('run callback not delivered', { runId: input.runId, reason });
    return { eventId: null, refused: reason };
  }
}

/** Starts the run's delivery and returns once it started: the run workflow may close at once. */
export async function announceRunEnd(input: RunCallbackInput): Promise<void> {
  await startChild(runCallbackWorkflow, {
    workflowId: workflowIds.runCallback(workflowInfo().workflowId),
    args: [input],
    parentClosePolicy: ParentClosePolicy.ABANDON,
  });
}
