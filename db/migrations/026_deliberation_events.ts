import type { Knex } from 'knex';

/**
 * A deliberation's step events (issue 40 item 2): one row per step, written by the worker as the step ends (a
 * workflow sink, worker/workers.ts) under the step's index in its deliberation, so a stream resumed from
 * `starting_after`, by any API process, reads the same events in the same order. Removed with their request.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('deliberation_events', (t) => {
    t.text('request_id').notNullable().references('requests.id').onDelete('CASCADE');
    t.integer('step').notNullable();
    t.jsonb('event').notNullable();
    t.timestamp('recorded_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['request_id', 'step']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('deliberation_events');
}
