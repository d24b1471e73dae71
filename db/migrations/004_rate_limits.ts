import type { Knex } from 'knex';

/**
 * Limits shared by every API process (DESIGN §8): a fixed one-minute window counter per API key, and one lease
 * row per call in flight per organisation. A lease expires unless renewed, so a crashed API process frees its
 * slots by itself. Estimates are logged so a receipt lookup of an estimate's id answers `receipt_available: false`.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('rate_limit_windows', (t) => {
    t.text('key_id').notNullable();
    t.timestamp('window_start', { useTz: true }).notNullable();
    t.integer('count').notNullable();
    t.primary(['key_id', 'window_start']);
  });

  await knex.schema.createTable('concurrency_leases', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.index(['org_id', 'expires_at']);
  });

  // One round trip, atomic per organisation: the advisory lock serialises acquirers of the same organisation
  // until the end of the calling statement's transaction, so two API processes can never both take the last slot.
  await knex.raw(`
    create function acquire_concurrency_lease(p_org text, p_id text, p_limit int, p_ttl_ms int) returns boolean
    language plpgsql as $$
    declare
      in_flight int;
    begin
      perform pg_advisory_xact_lock(hashtext('concurrency:' || p_org));
      delete from concurrency_leases where org_id = p_org and expires_at <= now();
      select count(*) into in_flight from concurrency_leases where org_id = p_org;
      if in_flight >= p_limit then
        return false;
      end if;
      insert into concurrency_leases (id, org_id, expires_at) values (p_id, p_org, now() + make_interval(secs => p_ttl_ms / 1000.0));
      return true;
    end $$;
  `);

  await knex.schema.createTable('estimate_requests', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable().references('organisations.id').onDelete('CASCADE');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('estimate_requests');
  await knex.raw('drop function acquire_concurrency_lease(text, text, int, int)');
  await knex.schema.dropTable('concurrency_leases');
  await knex.schema.dropTable('rate_limit_windows');
}
