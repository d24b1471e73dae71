import type { Knex } from 'knex';

/**
 * The holds still held, by age (issue 38 item 11): every worker's sweep (worker/hold-sweep.ts) looks for those older
 * than a minute whose workflow has closed, each minute, so it reads them by this index instead of every reservation.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw("create index reservations_held_idx on reservations (created_at) where state = 'held'");
  await knex.raw("create index plan_usage_held_idx on plan_usage (created_at) where state = 'held'");
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index plan_usage_held_idx');
  await knex.raw('drop index reservations_held_idx');
}
