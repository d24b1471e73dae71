import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { markDispatched, undispatchedEvents } from '../db/repositories/account-events';
import type { DbOrTrx } from '../db/repositories/shared';
import { workflowIds } from '../domain/workflow-ids';
import type { accountEventWorkflow } from '../workflows/account-events';
import { TASK_QUEUES } from '../workflows/task-queues';

/** Account events (issue 41 item 4): the only code that starts their delivery workflows and the upkeep schedule. */

/** The upkeep schedule's id: one per namespace, made by the first worker that starts. */
export const UPKEEP_SCHEDULE_ID = 'account-upkeep';

/**
 * Starts a delivery workflow for each event raised since the last pass (an event of an organisation without a webhook
 * URL is marked so, with no workflow); the id derives from the event's, so two workers passing at once start one.
 * Returns how many were started.
 */
export async function dispatchAccountEvents(db: DbOrTrx, client: Client, retryInitialMs: number): Promise<number> {
  let started = 0;
  for (const event of await undispatchedEvents(db, 100)) {
    try {
      await client.workflow.start<typeof accountEventWorkflow>('accountEventWorkflow', {
        taskQueue: TASK_QUEUES.deliberation,
        workflowId: workflowIds.accountEvent(event.id),
        args: [{ eventId: event.id, retryInitialMs }],
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
      });
      started++;
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
    await markDispatched(db, event.id);
  }
  return started;
}

/** The hourly upkeep (workflows/account-events.ts), as a Temporal Schedule; an existing one is left as it is. */
export async function ensureUpkeepSchedule(client: Client): Promise<void> {
  try {
    await client.schedule.create({
      scheduleId: UPKEEP_SCHEDULE_ID,
      spec: { intervals: [{ every: '1 hour' }] },
      action: {
        type: 'startWorkflow',
        workflowType: 'accountUpkeepWorkflow',
        taskQueue: TASK_QUEUES.deliberation,
        args: [],
      },
      policies: { overlap: ScheduleOverlapPolicy.SKIP },
    });
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
}
