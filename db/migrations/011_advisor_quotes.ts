import type { Knex } from 'knex';

/**
 * The advisor's quotes (spec 02, "Quote lifecycle"): the exact run a quote prices, its price, payer and expiry.
 * issued → approved (an approval is launching it) → launched, or issued → expired. `attempt` counts launches that
 * definitely failed (credited back), so the next approval launches under a fresh key; `run_id` is the run the
 * current attempt launches, named before it starts so a second approval can point at it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('advisor_quotes', (t) => {
    t.uuid('id').primary();
    t.text('org_id').notNullable().references('organisations.id').onDelete('CASCADE');
    t.text('api_key_id');
    // organisation: a live key's prepaid balance; none: a test key's simulated run; plan: a connected app's plan.
    t.text('payer').notNullable();
    t.text('mode_id').notNullable();
    t.text('model').notNullable();
    t.text('kind').notNullable(); // test | certification
    t.jsonb('request').notNullable();
    t.bigInteger('seed').notNullable(); // the questions' seed, up to 2^32
    t.bigint('price_micros').notNullable();
    t.text('state').notNullable().defaultTo('issued');
    t.integer('attempt').notNullable().defaultTo(0);
    t.uuid('run_id');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('approved_at', { useTz: true });
    t.timestamp('launched_at', { useTz: true });
    t.index(['org_id', 'created_at']);
    t.check("kind in ('test','certification')", [], 'advisor_quotes_kind_check');
    t.check("state in ('issued','approved','launched','expired')", [], 'advisor_quotes_state_check');
    t.check("payer in ('organisation','none','plan')", [], 'advisor_quotes_payer_check');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('advisor_quotes');
}
