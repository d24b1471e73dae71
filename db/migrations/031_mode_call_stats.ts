import type { Knex } from 'knex';

/**
 * Issue 42 item 3: a running count per mode configuration and tier of the calls that make its recorded fee rate (what
 * `recordedCallStats` summed over every receipt on each estimate). The settle statement adds each counted call; this
 * fills it from the receipts already written, with the same rule (live API keys, not paid by a plan).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('mode_call_stats', (t) => {
    t.text('mode_id').notNullable();
    t.text('config_hash').notNullable();
    t.text('tier').notNullable();
    t.integer('n').notNullable();
    t.bigInteger('input_tokens').notNullable();
    t.bigInteger('output_tokens').notNullable();
    t.bigInteger('mode_fee_micros').notNullable();
    t.primary(['mode_id', 'config_hash', 'tier']);
  });
  await knex.raw(`
    insert into mode_call_stats (mode_id, config_hash, tier, n, input_tokens, output_tokens, mode_fee_micros)
    select x.mode_id, x.config_hash, x.tier, count(*), sum(x.prompt_tokens), sum(x.completion_tokens), sum(x.mode_fee_micros)
      from receipts x join requests r on r.id = x.request_id join api_keys k on k.id = r.api_key_id
     where k.mode = 'live' and x.outcome->>'payer' is distinct from 'plan'
     group by x.mode_id, x.config_hash, x.tier`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('mode_call_stats');
}
