import type { Knex } from 'knex';

/**
 * Issue 41 items 4 and 5 (alerts; retention and deletion):
 * - `organisations.webhook_url`: where the organisation's account events are POSTed, signed as run callbacks are;
 *   `organisations.transcript_retention_days`: how long texts are kept (null: the default, domain/retention.ts; 0:
 *   none past the call);
 * - `balances.low_balance_micros` (the `balance.low` threshold, on the row every charge already updates, so the
 *   check costs no round trip) and `balances.low_alerted` (set when the alert fires, cleared when the balance is back
 *   at or above the threshold: one alert per fall);
 * - `account_events`: each event once per organisation and `dedupe_key` (unique), with its id, body and delivery;
 * - `receipts.transcript_deleted_at`, `run_questions.answers_deleted_at`: when the texts were blanked;
 *   `receipts.history_deleted_at`: when the call's workflow history (which holds them too) was deleted from Temporal;
 * - `blank_transcript(outcome, reason)` and `blank_run_answers(result)`: the texts of a stored outcome or question
 *   result emptied, every figure kept; `zero_retention(org)`: whether the organisation keeps no text past the call.
 */
const BLANK_TRANSCRIPT = `
  create function blank_transcript(o jsonb, reason text) returns jsonb language sql stable as $$
    select o || jsonb_build_object(
      'answer', '',
      'bestSeatRationale', '',
      'contestedPassage', case when jsonb_typeof(o->'contestedPassage') = 'object'
                               then (o->'contestedPassage') || '{"quote":"","why":""}'::jsonb else o->'contestedPassage' end,
      'bestSeat', case when jsonb_typeof(o->'bestSeat') = 'object'
                       then (o->'bestSeat') || '{"content":""}'::jsonb else o->'bestSeat' end,
      'seatPasses', coalesce((select jsonb_agg(p || '{"content":""}'::jsonb order by i)
                                from jsonb_array_elements(o->'seatPasses') with ordinality as s(p, i)), '[]'::jsonb),
      'transcriptDeleted', jsonb_build_object('at', to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                                              'reason', reason))
  $$`;

const BLANK_RUN_ANSWERS = `
  create function blank_run_answers(r jsonb) returns jsonb language sql immutable as $$
    select r || jsonb_build_object('modeAnswer', '', 'baselineAnswer', '')
             || case when jsonb_typeof(r->'arms') = 'object' then jsonb_build_object('arms', (r->'arms') || jsonb_build_object(
                  'selfMoa', case when jsonb_typeof(r->'arms'->'selfMoa') = 'object'
                                  then (r->'arms'->'selfMoa') || '{"answer":""}'::jsonb else r->'arms'->'selfMoa' end,
                  'majorityVote', case when jsonb_typeof(r->'arms'->'majorityVote') = 'object'
                                       then (r->'arms'->'majorityVote') || '{"answer":""}'::jsonb else r->'arms'->'majorityVote' end))
                  else '{}'::jsonb end
  $$`;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('organisations', (t) => {
    t.text('webhook_url');
    t.integer('transcript_retention_days');
  });
  await knex.raw(
    'alter table organisations add constraint organisations_retention_check check (transcript_retention_days between 0 and 3650)',
  );
  await knex.schema.alterTable('balances', (t) => {
    t.bigInteger('low_balance_micros').notNullable().defaultTo(2_000_000);
    t.boolean('low_alerted').notNullable().defaultTo(false);
  });
  await knex.schema.createTable('account_events', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable().references('organisations.id').onDelete('CASCADE');
    t.text('type').notNullable();
    t.text('dedupe_key').notNullable();
    t.text('body').notNullable();
    t.text('state').notNullable().defaultTo('pending');
    t.integer('attempts').notNullable().defaultTo(0);
    t.integer('last_status');
    t.text('last_error');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('dispatched_at', { useTz: true });
    t.timestamp('ended_at', { useTz: true });
    t.unique(['org_id', 'dedupe_key']);
    t.index(['org_id', 'created_at']);
  });
  await knex.raw(
    "alter table account_events add constraint account_events_state_check check (state in ('pending','delivered','failed','no_endpoint'))",
  );
  await knex.raw('create index account_events_undispatched on account_events (created_at) where dispatched_at is null');
  await knex.schema.alterTable('receipts', (t) => {
    t.timestamp('transcript_deleted_at', { useTz: true });
    t.timestamp('history_deleted_at', { useTz: true });
  });
  await knex.raw(
    'create index receipts_history_kept on receipts (transcript_deleted_at) where transcript_deleted_at is not null and history_deleted_at is null',
  );
  await knex.schema.alterTable('run_questions', (t) => t.timestamp('answers_deleted_at', { useTz: true }));
  await knex.raw('create index receipts_transcript_kept on receipts (completed_at) where transcript_deleted_at is null');
  await knex.raw(BLANK_TRANSCRIPT);
  await knex.raw(BLANK_RUN_ANSWERS);
  await knex.raw(`
    create function zero_retention(p_org text) returns boolean language sql stable as $$
      select coalesce((select transcript_retention_days = 0 from organisations where id = p_org), false)
    $$`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop function zero_retention(text)');
  await knex.raw('drop function blank_run_answers(jsonb)');
  await knex.raw('drop function blank_transcript(jsonb, text)');
  await knex.raw('drop index receipts_transcript_kept');
  await knex.schema.alterTable('run_questions', (t) => t.dropColumn('answers_deleted_at'));
  await knex.raw('drop index receipts_history_kept');
  await knex.schema.alterTable('receipts', (t) => t.dropColumns('transcript_deleted_at', 'history_deleted_at'));
  await knex.schema.dropTable('account_events');
  await knex.schema.alterTable('balances', (t) => {
    t.dropColumn('low_alerted');
    t.dropColumn('low_balance_micros');
  });
  await knex.raw('alter table organisations drop constraint organisations_retention_check');
  await knex.schema.alterTable('organisations', (t) => {
    t.dropColumn('transcript_retention_days');
    t.dropColumn('webhook_url');
  });
}
