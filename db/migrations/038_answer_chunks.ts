import type { Knex } from 'knex';

/**
 * The answer as its engine writes it (issue 53 item 4): the call that writes a watched deliberation's answer (the
 * express lane's seat, a synthesis) stores each piece of text it receives as one row, numbered from 0 after the step
 * index it follows, so a response's stream sends it as it is written and a stream resumed by any API process sends the
 * same pieces in the same order. A retried call continues the text stored (activities/answer-stream.ts): the pieces
 * joined are the answer the receipt records (`quorum audit`). Never written under zero retention; deleted with the
 * call's other texts.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('answer_chunks', (t) => {
    t.text('request_id').notNullable().references('requests.id').onDelete('CASCADE');
    t.integer('step').notNullable();
    t.integer('part').notNullable();
    t.text('text').notNullable();
    t.timestamp('recorded_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['request_id', 'step', 'part']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('answer_chunks');
}
