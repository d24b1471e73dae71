import type { Knex } from 'knex';
import type { AnswerFormat } from '../../domain/answer-options';
import type { ChatMessage } from '../../domain/messages';
import type { Outcome } from '../../domain/outcome';
import type { RequestState } from './requests';
import type { DbOrTrx } from './shared';

/** The settings a response was honoured with, as its object echoes them (issue 53 item 3); null where unset. */
export interface ResponseSettings {
  temperature: number | null;
  topP: number | null;
  maxOutputTokens: number | null;
  format: AnswerFormat | null;
}

/** What a response carries beside its deliberation (issue 40 item 1): one row per request. */
export interface ResponseExtras {
  instructions: string | null;
  metadata: Record<string, string> | null;
  background: boolean;
  /** Null on a response recorded before migration 037. */
  settings: ResponseSettings | null;
  /** Its conversation before the answer, `instructions` aside; null once its texts were deleted (or never kept). */
  input: ChatMessage[] | null;
  previousResponseId: string | null;
}

export async function recordResponse(db: DbOrTrx, input: { requestId: string; orgId: string } & ResponseExtras): Promise<void> {
  await db('responses')
    .insert({
      request_id: input.requestId,
      org_id: input.orgId,
      // An organisation that keeps no transcripts (issue 41 item 5) never has the instructions or the input stored.
      instructions: db.raw('case when zero_retention(?) then null else ? end', [input.orgId, input.instructions]),
      metadata: input.metadata === null ? null : JSON.stringify(input.metadata),
      background: input.background,
      settings: input.settings === null ? null : JSON.stringify(input.settings),
      input: db.raw('case when zero_retention(?) then null else cast(? as jsonb) end', [input.orgId, JSON.stringify(input.input)]),
      previous_response_id: input.previousResponseId,
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
      'p.settings',
      'p.input',
      'p.previous_response_id',
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
        settings: ResponseSettings | null;
        input: ChatMessage[] | null;
        previous_response_id: string | null;
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
    extras:
      row.extras_id === null
        ? null
        : {
            instructions: row.instructions,
            metadata: row.metadata,
            background: row.background === true,
            settings: row.settings,
            input: row.input,
            previousResponseId: row.previous_response_id,
          },
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
      .merge({ deleted_at: trx.fn.now(), instructions: null, input: null });
    // The texts blanked as a transcript DELETE blanks them (migration 030's blank_transcript), the figures kept.
    await trx('receipts')
      .where({ request_id: input.requestId })
      .update({ outcome: trx.raw("blank_transcript(outcome, 'deleted')"), transcript_deleted_at: trx.fn.now() });
    await trx('receipt_seats').where({ request_id: input.requestId }).update({ content: '' });
    await trx('answer_chunks').where({ request_id: input.requestId }).delete();
  });
}
