import type { Knex } from 'knex';

/**
 * Responses (issue 40 items 1 and 3, `POST /v1/responses`):
 * - `requests.state` may be `cancelled`: a deliberation stopped by its caller, billed for what ran, its receipt
 *   `status: cancelled`; like a failed one, its key may run again;
 * - `responses`: what a response carries beside its deliberation (its instructions, metadata, whether it ran in the
 *   background) and when its stored answer was deleted (`DELETE /v1/responses/{id}`), one row per request.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table requests drop constraint requests_state_check');
  await knex.raw(
    "alter table requests add constraint requests_state_check check (state in ('running','succeeded','failed','capped','cancelled'))",
  );
  await knex.schema.createTable('responses', (t) => {
    t.text('request_id').primary().references('requests.id').onDelete('CASCADE');
    t.text('org_id').notNullable();
    t.text('instructions');
    t.jsonb('metadata');
    t.boolean('background').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('deleted_at', { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('responses');
  await knex.raw('alter table requests drop constraint requests_state_check');
  await knex.raw("alter table requests add constraint requests_state_check check (state in ('running','succeeded','failed','capped'))");
}
