import type { Knex } from 'knex';

/**
 * Keys by API and the activity log (issue 41 items 3 and 6):
 * - `api_keys.mode` may be `admin`: a key the owner makes in the console that manages the organisation's keys and
 *   reads its activity, and calls no mode; a key has a `label` and a `monthly_budget_micros` (a call that would take
 *   the key's spend this calendar month (UTC) past it is refused before it runs);
 * - `requests (api_key_id, created_at)`: the budget check sums a key's calls of the month by this index;
 * - `activity`: every change to the account, who made it, from where and what changed (never a secret).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table api_keys drop constraint api_keys_mode_check');
  await knex.raw("alter table api_keys add constraint api_keys_mode_check check (mode in ('live','test','admin'))");
  await knex.schema.alterTable('api_keys', (t) => {
    t.text('label');
    t.bigInteger('monthly_budget_micros');
    t.check('monthly_budget_micros is null or monthly_budget_micros > 0', [], 'api_keys_budget_check');
  });
  await knex.raw('create index requests_api_key_idx on requests (api_key_id, created_at) where api_key_id is not null');
  await knex.schema.createTable('activity', (t) => {
    t.bigIncrements('id');
    t.text('org_id').notNullable().references('organisations.id').onDelete('CASCADE');
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.text('kind').notNullable();
    // Who: a person, a key, or the operator at the CLI (no id).
    t.text('actor_kind').notNullable();
    t.text('actor_id');
    // From where: the edge, and the client's address where the edge has one.
    t.text('edge').notNullable();
    t.text('ip');
    // What it changed: the key, mode, family or person it was about, and the change's own fields.
    t.text('subject');
    t.jsonb('detail').notNullable().defaultTo('{}');
    t.index(['org_id', 'id']);
    t.index(['org_id', 'kind', 'id']);
    t.check("actor_kind in ('person','key','operator')", [], 'activity_actor_kind_check');
    t.check("edge in ('console','api','cli','mcp')", [], 'activity_edge_check');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('activity');
  await knex.raw('drop index requests_api_key_idx');
  await knex.schema.alterTable('api_keys', (t) => {
    t.dropChecks(['api_keys_budget_check']);
    t.dropColumn('monthly_budget_micros');
    t.dropColumn('label');
  });
  await knex.raw("delete from api_keys where mode = 'admin'");
  await knex.raw('alter table api_keys drop constraint api_keys_mode_check');
  await knex.raw("alter table api_keys add constraint api_keys_mode_check check (mode in ('live','test'))");
}
