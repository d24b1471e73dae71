import type { Knex } from 'knex';

/**
 * Issue 41 items 1 and 2: `GET /v1/receipts` lists an organisation's calls newest first, a page at a time, from
 * `requests`, which had no index by organisation and time (only by idempotency key).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('create index requests_org_created on requests (org_id, created_at desc, id desc)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index requests_org_created');
}
