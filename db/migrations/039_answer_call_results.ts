import type { Knex } from 'knex';

/**
 * A call's result after its pieces (DESIGN §16): when a call that wrote the answer returns, one more row at the next
 * part holds its result (text aside: its pieces are the text) and which call it was. Any later execution of that call
 * (a workflow task run again after it returned, before its result was recorded) returns this result instead of asking
 * its engine again, so the pieces stored stay the answer the receipt records; no piece can follow it, its place being
 * taken. Such a row's `text` is empty.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('answer_chunks', (t) => {
    t.jsonb('call_result');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('answer_chunks', (t) => {
    t.dropColumn('call_result');
  });
}
