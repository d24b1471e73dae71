import type { Knex } from 'knex';
import { DEFAULT_RETENTION_DAYS, type TranscriptDeletedReason } from '../../domain/retention';
import type { DbOrTrx } from './shared';

/**
 * Transcript retention and deletion (issue 41 item 5): the texts of a call (its answer, every seat's text, the
 * judge's rationale and quoted passage, a response's instructions and input) and of a run's questions (the answers) are
 * blanked in place by the SQL functions of migration 030; money, tokens, costs and every other figure stay, so the
 * ledger, the receipts' sums and `quorum audit` are unchanged.
 */

/**
 * The statement that blanks the receipts `target` selects (a CTE of `request_id`s), their seats, their response's
 * instructions and input, their answer's streamed pieces (deleted) and any unsettled outcome kept on their request;
 * returns how many receipts it blanked.
 */
async function blankSelected(
  db: DbOrTrx,
  target: string,
  bindings: Record<string, string | number>,
  reason: TranscriptDeletedReason,
): Promise<number> {
  const { rows } = await db.raw<{ rows: { n: number }[] }>(
    `with target as (${target}),
          r as (update receipts x set outcome = blank_transcript(x.outcome, :reason), transcript_deleted_at = now()
                  from target t where x.request_id = t.request_id returning x.request_id),
          s as (update receipt_seats s set content = '' from target t where s.request_id = t.request_id),
          p as (update responses p set instructions = null, input = null from target t where p.request_id = t.request_id),
          c as (delete from answer_chunks c using target t where c.request_id = t.request_id),
          u as (update requests q set unsettled = jsonb_set(q.unsettled, '{outcome}', blank_transcript(q.unsettled->'outcome', :reason))
                  from target t where q.id = t.request_id and q.unsettled is not null)
     select count(*)::int as n from r`,
    { ...bindings, reason },
  );
  return rows[0].n;
}

/**
 * One call's texts, on its organisation's request: false when the organisation has no such request. A request with
 * no receipt (it failed) has only its response's instructions and any unsettled outcome to blank.
 */
export async function deleteTranscript(db: Knex, orgId: string, requestId: string): Promise<{ found: boolean; workflowId?: string }> {
  const request = (await db('requests').where({ id: requestId, org_id: orgId }).first('workflow_id')) as
    { workflow_id: string } | undefined;
  if (!request) return { found: false };
  await blankSelected(
    db,
    'select id as request_id from requests where id = :requestId and org_id = :orgId',
    { requestId, orgId },
    'deleted',
  );
  return { found: true, workflowId: request.workflow_id };
}

/** Rows one purge statement blanks at most. */
export const PURGE_BATCH = 500;

/** Calls and run questions past their organisation's retention, at most `batch` of each; how many of each. */
export async function purgeExpiredTranscripts(db: DbOrTrx, batch = PURGE_BATCH): Promise<{ receipts: number; questions: number }> {
  const days = `coalesce(o.transcript_retention_days, ${DEFAULT_RETENTION_DAYS})`;
  const receipts = await blankSelected(
    db,
    `select x.request_id from receipts x join organisations o on o.id = x.org_id
      where x.transcript_deleted_at is null and x.completed_at < now() - make_interval(days => ${days})
      limit :batch`,
    { batch },
    'retention',
  );
  const { rows } = await db.raw<{ rows: { n: number }[] }>(
    `with target as (
       select q.run_id, q.question_id from run_questions q join runs r on r.id = q.run_id join organisations o on o.id = r.org_id
        where q.answers_deleted_at is null and q.completed_at < now() - make_interval(days => ${days})
        limit :batch),
     done as (update run_questions q set result = blank_run_answers(q.result), answers_deleted_at = now()
                from target t where q.run_id = t.run_id and q.question_id = t.question_id returning 1)
     select count(*)::int as n from done`,
    { batch },
  );
  return { receipts, questions: rows[0].n };
}

/** The organisation's retention in days as set (null: the default). */
export async function retentionDaysOf(db: DbOrTrx, orgId: string): Promise<number | null> {
  const row = (await db('organisations').where({ id: orgId }).first('transcript_retention_days')) as
    { transcript_retention_days: number | null } | undefined;
  return row?.transcript_retention_days ?? null;
}

/**
 * Blanked calls whose workflow history is still to be deleted from Temporal (the worker's sweep does it): the
 * request's workflow id, and whether a later run under its key took the id over (then its history is not this call's).
 */
export async function historiesToForget(
  db: DbOrTrx,
  limit: number,
): Promise<{ requestId: string; workflowId: string; superseded: boolean }[]> {
  const rows = (await db('receipts as x')
    .join('requests as r', 'r.id', 'x.request_id')
    .whereNotNull('x.transcript_deleted_at')
    .whereNull('x.history_deleted_at')
    .orderBy('x.transcript_deleted_at')
    .limit(limit)
    .select('x.request_id', 'r.workflow_id', 'r.superseded_at')) as {
    request_id: string;
    workflow_id: string;
    superseded_at: Date | null;
  }[];
  return rows.map((r) => ({ requestId: r.request_id, workflowId: r.workflow_id, superseded: r.superseded_at !== null }));
}

export async function markHistoryForgotten(db: DbOrTrx, requestId: string): Promise<void> {
  await db('receipts').where({ request_id: requestId }).update({ history_deleted_at: db.fn.now() });
}
