import type { Knex } from 'knex';

/**
 * A dry run's quote (issue 38 item 8): stored beside the advisor's quotes, with what a launch of the same body matches
 * it by (the request's fingerprint and the mode version it priced) and each question's price, so the launch bills
 * exactly the quote and draws its questions. Observed rates are read per configuration (item 10): an index to match.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('advisor_quotes', (t) => {
    t.text('fingerprint');
    t.integer('mode_version');
    t.jsonb('question_prices');
  });
  await knex.raw(
    "create index advisor_quotes_dry_run on advisor_quotes (org_id, kind, fingerprint) where fingerprint is not null and state = 'issued'",
  );
  await knex.raw('create index receipts_mode_config_tier on receipts (mode_id, config_hash, tier)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index receipts_mode_config_tier');
  await knex.raw('drop index advisor_quotes_dry_run');
  await knex.schema.alterTable('advisor_quotes', (t) => {
    t.dropColumns('fingerprint', 'mode_version', 'question_prices');
  });
}
