import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // A mode's identity; its configuration lives in versioned rows so a receipt can name the panel it ran.
  await knex.schema.createTable('modes', (t) => {
    t.text('id').primary(); // Form A key
    t.text('ticker').notNullable().unique(); // Form B COMPANY:MODE
    t.text('org_id').references('organisations.id').onDelete('CASCADE'); // null: a system mode
    t.text('name').notNullable();
    t.text('description');
    t.text('use_when').notNullable();
    t.boolean('published').notNullable().defaultTo(true);
    t.integer('current_version').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('mode_versions', (t) => {
    t.text('mode_id').notNullable().references('modes.id').onDelete('CASCADE');
    t.integer('version').notNullable();
    t.jsonb('config').notNullable();
    t.text('config_hash').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['mode_id', 'version']);
  });

  // One row per idempotency key: the API decides 409 / replay / new run from it (DESIGN §4).
  await knex.schema.createTable('requests', (t) => {
    t.text('id').primary(); // request id, also in the workflow's input
    t.text('org_id').notNullable().references('organisations.id').onDelete('CASCADE');
    t.text('api_key_id');
    t.text('idempotency_key').notNullable();
    t.text('workflow_id').notNullable();
    t.text('fingerprint').notNullable();
    t.text('mode_id').notNullable();
    t.text('model').notNullable();
    t.text('state').notNullable(); // running | succeeded | failed | capped
    t.text('error_code');
    t.text('finish_reason');
    t.boolean('answer_truncated');
    t.integer('seats_answered');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('completed_at', { useTz: true });
    // Set when a later run took over this key (a failed run, or a capped one on Form B); the row stays for its receipt.
    t.timestamp('superseded_at', { useTz: true });
    t.check("state in ('running','succeeded','failed','capped')", [], 'requests_state_check');
  });
  // One live request per idempotency key.
  await knex.raw('create unique index requests_live_key on requests (org_id, idempotency_key) where superseded_at is null');

  await knex.schema.createTable('receipts', (t) => {
    t.text('request_id').primary().references('requests.id').onDelete('CASCADE');
    t.text('org_id').notNullable();
    t.text('mode_id').notNullable();
    t.integer('mode_version').notNullable();
    t.text('config_hash').notNullable();
    t.text('status').notNullable();
    t.text('lane');
    t.text('tier').notNullable();
    t.bigint('gateway_micros').notNullable();
    t.bigint('platform_fee_micros').notNullable();
    t.bigint('mode_fee_micros').notNullable();
    t.bigint('cap_credit_micros').notNullable();
    t.bigint('billed_micros').notNullable();
    t.integer('prompt_tokens').notNullable();
    t.integer('completion_tokens').notNullable();
    t.integer('latency_ms').notNullable();
    t.jsonb('outcome').notNullable(); // the full domain Outcome both Forms serialise from
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('completed_at', { useTz: true }).notNullable();
    t.index(['org_id', 'created_at']);
    t.index(['mode_id', 'tier']);
  });

  // One row per seat per round.
  await knex.schema.createTable('receipt_seats', (t) => {
    t.text('request_id').notNullable().references('receipts.request_id').onDelete('CASCADE');
    t.text('role').notNullable();
    t.integer('round_number').notNullable();
    t.text('model_used').notNullable();
    t.text('original_model');
    t.boolean('fallback_used').notNullable();
    t.integer('tokens_in').notNullable();
    t.integer('tokens_out').notNullable();
    t.timestamp('started_at', { useTz: true }).notNullable();
    t.timestamp('ended_at', { useTz: true }).notNullable();
    t.integer('latency_ms').notNullable();
    t.double('judge_score');
    t.boolean('is_best_seat').notNullable();
    t.text('source').notNullable();
    t.bigint('real_cost_micros').notNullable();
    t.integer('fee_rate_ppm').notNullable();
    t.bigint('fee_micros').notNullable();
    t.text('content').notNullable();
    t.primary(['request_id', 'role', 'round_number']);
  });

  // Operator-loaded documents: the default grounding source, searched with Postgres full-text search.
  await knex.schema.createTable('grounding_documents', (t) => {
    t.bigIncrements('id');
    t.text('title').notNullable();
    t.text('body').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(
    "alter table grounding_documents add column tsv tsvector generated always as (to_tsvector('english', title || ' ' || body)) stored",
  );
  await knex.raw('create index grounding_documents_tsv on grounding_documents using gin (tsv)');
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['grounding_documents', 'receipt_seats', 'receipts', 'requests', 'mode_versions', 'modes']) {
    await knex.schema.dropTable(table);
  }
}
