import type { KeyPrincipal } from './principal';
import { organisationRows } from '../db/repositories/organisation-export';
import { deleteTranscript, markHistoryForgotten } from '../db/repositories/retention';
import { deleteClosedWorkflow } from '../starters/histories';
import { QuorumError } from '../domain/errors';
import { isStorableText } from '../domain/storable-text';
import type { OperationDeps } from './deps';

/**
 * Deleting a call's texts and exporting what the organisation owns (issue 41 item 5). The texts are blanked in
 * Postgres (db/repositories/retention.ts) and the call's closed workflow is deleted from Temporal, whose history
 * holds the prompt and the answers (starters/histories.ts; docs/retention.md).
 */

/**
 * `DELETE /v1/receipts/{request_id}/transcript`: the call's texts, gone; its figures and money stay. Another
 * organisation's id (or none) is 404; a call still running is 409 (its texts are not written yet).
 */
export async function deleteTranscriptOf(
  deps: Pick<OperationDeps, 'db' | 'client' | 'log'>,
  auth: KeyPrincipal,
  requestId: string,
): Promise<{ requestId: string }> {
  const notFound = new QuorumError(
    'receipt_not_found',
    `No receipt \`${JSON.stringify(requestId).slice(1, -1)}\` under this organisation.`,
    {
      param: 'request_id',
    },
  );
  if (!isStorableText(requestId) || !requestId.trim()) throw notFound;
  const state = (await deps.db('requests').where({ id: requestId, org_id: auth.orgId }).first('state', 'superseded_at')) as
    { state: string; superseded_at: Date | null } | undefined;
  if (!state) throw notFound;
  if (state.state === 'running')
    throw new QuorumError('request_in_progress', 'The call is still running; delete its transcript once it has ended.', { requestId });
  const deleted = await deleteTranscript(deps.db, auth.orgId, requestId);
  // A superseded request's workflow id names its successor's workflow, whose history is not this call's.
  if (deleted.workflowId && state.superseded_at === null) await forgetWorkflow(deps, requestId, deleted.workflowId);
  return { requestId };
}

/** The call's closed workflow deleted from Temporal now; a failure is logged and left to the worker's next pass. */
async function forgetWorkflow(deps: Pick<OperationDeps, 'db' | 'client' | 'log'>, requestId: string, workflowId: string): Promise<void> {
  try {
    if ((await deleteClosedWorkflow(deps.client, workflowId)) !== 'running') await markHistoryForgotten(deps.db, requestId);
  } catch (err) {
    deps.log.warn('transcript deleted; its workflow history is left to the next pass', { workflowId, err });
  }
}

/** `GET /v1/organization/export`: the organisation's rows as JSONL lines, streamed. */
export async function* exportOrganisation(deps: Pick<OperationDeps, 'db'>, auth: KeyPrincipal): AsyncGenerator<string> {
  for await (const row of organisationRows(deps.db, auth.orgId)) yield `${JSON.stringify(row)}\n`;
}
