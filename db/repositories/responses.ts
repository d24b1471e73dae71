import type { Knex } from 'knex';
import type { Outcome } from '../../domain/outcome';
import type { RequestState } from './requests';
import type { DbOrTrx } from './shared';

/** What a response carries beside its deliberation (issue 40 item 1): one row per request. */
export interface ResponseExtras {
  instructions: string | null;
  metadata: Record<string, string> | null;
  background: boolean;
}

export async function recordResponse(db: DbOrTrx, input: { requestId: string; orgId: string } & ResponseExtras): Promise<void> {
  await db('responses')
    .insert({
      request_id: input.requestId,
      org_id: input.orgId,
      // An organisation that keeps no transcripts (issue 41 item 5) never has the instructions stored.
      instructions: db.raw('case when zero_retention(?) then null else ? end', [input.orgId, input.instructions]),
      metadata: input.metadata === null ? null : JSON.stringify(input.metadata),
      background: input.background,
    })
    .onConflict('request_id')
    .ignore();
}

/** The live request of a key as a response shows it: its state, its extras (absent for a chat completion's) and outcome. */
export interface ResponseRow {
  requestId: string;
  workflowId: string;
  state: RequestState;
  errorCode: string | null;
  model: string;
  createdAt: Date;
  extras: ResponseExtras | null;
  deleted: boolean;
  outcome: Outcome | null;
}

export async function findResponse(db: DbOrTrx, orgId: string, idempotencyKey: string): Promise<ResponseRow | undefined> {
  const row = (await db('requests as r')
    .leftJoin('responses as p', 'p.request_id', 'r.id')
    .leftJoin('receipts as x', 'x.request_id', 'r.id')
    .where({ 'r.org_id': orgId, 'r.idempotency_key': idempotencyKey })
    .whereNull('r.superseded_at')
    .first(
      'r.id',
      'r.workflow_id',
      'r.state',
      'r.error_code',
      'r.model',
      'r.created_at',
      'p.request_id as extras_id',
      'p.instructions',
      'p.metadata',
      'p.background',
      'p.deleted_at',
      'x.outcome',
    )) as
    | {
        id: string;
        workflow_id: string;
        state: RequestState;
        error_code: string | null;
        model: string;
        created_at: Date;
        extras_id: string | null;
        instructions: string | null;
        metadata: Record<string, string> | null;
        background: boolean | null;
        deleted_at: Date | null;
        outcome: Outcome | null;
      }
    | undefined;
  if (!row) return undefined;
  return {
    requestId: row.id,
    workflowId: row.workflow_id,
    state: row.state,
    errorCode: row.error_code,
    model: row.model,
    createdAt: row.created_at,
    extras: row.extras_id === null ? null : { instructions: row.instructions, metadata: row.metadata, background: row.background === true },
    deleted: row.deleted_at !== null,
    outcome: row.outcome,
  };
}

/**
 * `DELETE /v1/responses/{id}`, and a response sent with `store: false` once answered: the stored answer's texts are
 * removed from its receipt (figures kept: the call was billed) and the response is marked deleted, in one transaction.
 */
export async function deleteStoredAnswer(db: Knex, input: { requestId: string; orgId: string }): Promise<void> {
  await db.transaction(async (trx) => {
    await trx('responses')
      .insert({ request_id: input.requestId, org_id: input.orgId, background: false, deleted_at: trx.fn.now() })
      .onConflict('request_id')
      .merge({ deleted_at: trx.fn.now() });
    // The texts blanked as a transcript DELETE blanks them (migration 030's blank_transcript), the figures kept.
    await trx('receipts')
      .where({ request_id: input.requestId })
      .update({ outcome: trx.raw("blank_transcript(outcome, 'deleted')"), transcript_deleted_at: trx.fn.now() });
    await trx('receipt_seats').where({ request_id: input.requestId }).update({ content: '' });
  });
}
