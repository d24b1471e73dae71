import type { Knex } from 'knex';

/**
 * A completion or estimate refused before it ran (400, 402, 409, 413, 429 after the key was read) still had a
 * request id in its error body; recording it lets the receipts endpoint answer that no deliberation ran (spec 01,
 * "Receipt availability") instead of not knowing the id.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('refused_requests', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable().references('organisations.id').onDelete('CASCADE');
    t.text('code').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('refused_requests');
}
