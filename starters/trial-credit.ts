import type { Client } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { listOrganisationsAwaitingTrialTimer, markTrialTimerStarted } from '../db/repositories/trial-credit';
import type { DbOrTrx } from '../db/repositories/shared';
import { workflowIds } from '../domain/workflow-ids';
import { TASK_QUEUES } from '../workflows/task-queues';
import type { TrialCreditInput, trialCreditWorkflow } from '../workflows/trial-credit';

/*
 * Starts the trial credit workflow (DESIGN §7). starters/ holds one module per workflow type, the only code that
 * starts that workflow, so the CLI, the worker and the supervisor share it without importing one another.
 */

/**
 * Starts `trial/{org_id}` once. A running timer is reused (USE_EXISTING) and a finished one is never restarted
 * (REJECT_DUPLICATE), so calling this again, from any process, is harmless.
 */
export async function startTrialTimer(db: DbOrTrx, client: Client, input: TrialCreditInput): Promise<void> {
  try {
    await client.workflow.start<typeof trialCreditWorkflow>('trialCreditWorkflow', {
      taskQueue: TASK_QUEUES.deliberation,
      workflowId: workflowIds.trialCredit(input.orgId),
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
  await markTrialTimerStarted(db, input.orgId);
}

/** Starts the trial timer of every organisation created while Temporal was unreachable. Returns how many it started. */
export async function ensureTrialTimers(db: DbOrTrx, client: Client): Promise<number> {
  const pending = await listOrganisationsAwaitingTrialTimer(db);
  for (const org of pending) await startTrialTimer(db, client, { orgId: org.orgId, trialStartedAt: org.trialStartedAt.toISOString() });
  return pending.length;
}
