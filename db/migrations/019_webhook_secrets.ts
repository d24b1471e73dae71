import type { Knex } from 'knex';

/**
 * Each organisation's webhook signing secret (issue 28 item 6): the key its completion callbacks are signed with,
 * sealed with the secret box as provider keys are (AES-256-GCM, bound to the organisation as associated data). One
 * row per organisation; a rotation replaces it. `shown_at`: when the console last showed it (null: never, as for a
 * secret made by a delivery before anyone asked for one).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_secrets', (t) => {
    t.text('org_id').primary().references('organisations.id').onDelete('CASCADE');
    t.binary('ciphertext').notNullable();
    t.binary('iv').notNullable();
    t.binary('tag').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('shown_at', { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('webhook_secrets');
}
