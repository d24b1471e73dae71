import type { Knex } from 'knex';

/**
 * Issue 53 item 3, a response as OpenAI keeps one:
 * - `settings`: what it was honoured with (`temperature`, `top_p`, `max_output_tokens`, `text.format`), shown on every
 *   poll, not only on the create's answer; null on a response created before (it shows OpenAI's "unset" values);
 * - `input`: its conversation before the answer (`previous_response_id`'s, then its own input; not `instructions`),
 *   for `GET /v1/responses/{id}/input_items` and a later `previous_response_id`. A text of the call: never stored
 *   under zero retention, blanked (null) with the call's other texts (db/repositories/retention.ts, a DELETE);
 * - `previous_response_id`: the response it continued, as sent, shown on it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('responses', (t) => {
    t.jsonb('settings');
    t.jsonb('input');
    t.text('previous_response_id');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('responses', (t) => {
    t.dropColumn('settings');
    t.dropColumn('input');
    t.dropColumn('previous_response_id');
  });
}
