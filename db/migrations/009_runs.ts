import type { Knex } from 'knex';

/**
 * Test and certification runs (spec 02, DESIGN §10). A run row is written with its charge in one transaction at
 * launch; each question's result is written by its own workflow as it completes, so a crash loses no finished
 * question; the run's summary is written once when it ends.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('runs', (t) => {
    t.uuid('id').primary();
    t.text('org_id').notNullable().references('organisations.id').onDelete('CASCADE');
    t.text('kind').notNullable(); // test | certification
    t.text('workflow_id').notNullable().unique();
    t.text('idempotency_key').notNullable();
    t.text('fingerprint').notNullable();
    t.text('key_mode').notNullable();
    t.text('api_key_id');
    t.text('mode_id').notNullable();
    t.integer('mode_version').notNullable();
    t.text('model').notNullable();
    t.jsonb('spec').notNullable();
    t.integer('total_questions').notNullable();
    t.bigint('billed_micros').notNullable();
    t.bigint('refunded_micros').notNullable().defaultTo(0);
    t.integer('estimated_minutes').notNullable();
    // launching → queued → running → judging → completed | failed | cancelled (DESIGN §12, plus the launch itself).
    t.text('state').notNullable();
    t.text('error_code');
    t.text('error_message');
    t.jsonb('summary');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('started_at', { useTz: true });
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('finished_at', { useTz: true });
    t.unique(['org_id', 'kind', 'idempotency_key']);
    t.index(['org_id', 'kind', 'created_at']);
    t.index(['mode_id', 'state']);
    t.check("kind in ('test','certification')", [], 'runs_kind_check');
    t.check("state in ('launching','queued','running','judging','completed','failed','cancelled')", [], 'runs_state_check');
  });

  await knex.schema.createTable('run_questions', (t) => {
    t.uuid('run_id').notNullable().references('runs.id').onDelete('CASCADE');
    t.text('question_id').notNullable();
    t.text('bucket').notNullable();
    t.text('tier').notNullable();
    t.text('cluster').notNullable();
    t.jsonb('result').notNullable();
    t.timestamp('completed_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['run_id', 'question_id']);
  });

  // An organisation's own known-answer questions, imported whole or not at all.
  await knex.schema.createTable('question_sets', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable().references('organisations.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.integer('size').notNullable();
    t.jsonb('questions').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  // Form B certifies listed modes only (spec 02, item 6).
  await knex.schema.alterTable('modes', (t) => {
    t.boolean('listed').notNullable().defaultTo(false);
  });

  // Unspent questions of a cancelled or failed run are credited back.
  await knex.raw('alter table ledger_entries drop constraint ledger_entries_kind_check');
  await knex.raw(
    "alter table ledger_entries add constraint ledger_entries_kind_check check (kind in ('top_up','trial_credit','trial_expiry','reservation','release','charge','cap_credit','test_run_charge','run_refund'))",
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table ledger_entries drop constraint ledger_entries_kind_check');
  await knex.raw(
    "alter table ledger_entries add constraint ledger_entries_kind_check check (kind in ('top_up','trial_credit','trial_expiry','reservation','release','charge','cap_credit','test_run_charge'))",
  );
  await knex.schema.alterTable('modes', (t) => {
    t.dropColumn('listed');
  });
  await knex.schema.dropTable('question_sets');
  await knex.schema.dropTable('run_questions');
  await knex.schema.dropTable('runs');
}
