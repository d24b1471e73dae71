import type { Knex } from 'knex';

/**
 * A deliberation whose outcome the database refused (a deterministic settle failure) keeps that outcome on its
 * request, so a retry with the same key settles it again instead of paying the providers for a second run.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('requests', (t) => {
    t.jsonb('unsettled');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('requests', (t) => {
    t.dropColumn('unsettled');
  });
}
