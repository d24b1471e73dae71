import type { Client } from '@temporalio/client';
import { historiesToForget, markHistoryForgotten } from '../db/repositories/retention';
import type { DbOrTrx } from '../db/repositories/shared';
import { workflowStatus } from './deliberation';

/**
 * Temporal's side of transcript deletion (issue 41 item 5): a call's workflow history holds its prompt and answers,
 * so once its texts are blanked in Postgres (its owner's DELETE, the retention's end, or at once under zero retention)
 * its closed execution is deleted from Temporal too. The namespace's retention (72 h) bounds every other history.
 */

/** `deleted`, `gone` (never there, or retention took it), or `running` (left for a later pass: deleting would end it). */
export async function deleteClosedWorkflow(client: Client, workflowId: string): Promise<'deleted' | 'gone' | 'running'> {
  const status = await workflowStatus(client, workflowId);
  if (status === 'NOT_FOUND') return 'gone';
  if (status === 'RUNNING') return 'running';
  await client.workflowService.deleteWorkflowExecution({ namespace: client.options.namespace, workflowExecution: { workflowId } });
  return 'deleted';
}

/**
 * One pass: the histories of blanked calls deleted, oldest first. A superseded call's workflow id names its
 * successor's execution (not this call's), so nothing is deleted for it. Returns how many were deleted.
 */
export async function forgetHistories(db: DbOrTrx, client: Client, limit = 100): Promise<number> {
  let deleted = 0;
  for (const call of await historiesToForget(db, limit)) {
    const done = call.superseded ? 'gone' : await deleteClosedWorkflow(client, call.workflowId);
    if (done === 'running') continue;
    if (done === 'deleted') deleted++;
    await markHistoryForgotten(db, call.requestId);
  }
  return deleted;
}
