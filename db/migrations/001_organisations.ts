import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('organisations', (t) => {
    t.text('id').primary();
    t.text('name').notNullable();
    t.text('status').notNullable().defaultTo('active');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.check("status in ('active','suspended')", [], 'organisations_status_check');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('organisations');
}
