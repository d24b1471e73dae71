import type { Knex } from 'knex';

/**
 * Runs billed to a plan (issue 38 item 12, spec 02 "a connected app that signs in pays real cost with no mode fee"):
 * - `runs.plan_person_id`, `plan_id`, `plan_period`: a run a connected app launched is charged to the person's plan
 *   for that UTC month, never to the organisation's balance (it has no ledger entries);
 * - `plan_month_used` counts such runs at what they kept, billed − refunded, so a refund of a plan's run (whatever
 *   the run's refund rule) gives the allowance back through the run's one refund path, and `hold_plan_charge` (a
 *   completion's hold) sees the runs' spend;
 * - `advisor_quotes.payer_person_id`: whose plan a plan-billed quote bills, so another person's approval is refused.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('runs', (t) => {
    t.text('plan_person_id').references('people.id').onDelete('SET NULL');
    t.text('plan_id').references('plans.id');
    t.date('plan_period');
    t.index(['plan_person_id', 'plan_period']);
  });
  await knex.raw(
    // A person deleted later leaves the run's plan and month (the person's own rows go with them).
    'alter table runs add constraint runs_plan_check check ((plan_id is null) = (plan_period is null) and (plan_person_id is null or plan_id is not null))',
  );
  await knex.schema.alterTable('advisor_quotes', (t) => {
    t.text('payer_person_id');
  });
  await knex.raw(`
    create or replace function plan_month_used(p_person text, p_period date) returns bigint
    language sql stable as $$
      select ((select coalesce(sum(case state when 'settled' then charged_micros when 'held' then held_micros else 0 end), 0)
                 from plan_usage where person_id = p_person and period = p_period)
            + (select coalesce(sum(billed_micros - refunded_micros), 0)
                 from runs where plan_person_id = p_person and plan_period = p_period))::bigint
    $$
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    create or replace function plan_month_used(p_person text, p_period date) returns bigint
    language sql stable as $$
      select coalesce(sum(case state when 'settled' then charged_micros when 'held' then held_micros else 0 end), 0)::bigint
        from plan_usage where person_id = p_person and period = p_period
    $$
  `);
  await knex.schema.alterTable('advisor_quotes', (t) => t.dropColumn('payer_person_id'));
  await knex.raw('alter table runs drop constraint runs_plan_check');
  await knex.schema.alterTable('runs', (t) => {
    t.dropIndex(['plan_person_id', 'plan_period']);
    t.dropColumn('plan_person_id');
    t.dropColumn('plan_id');
    t.dropColumn('plan_period');
  });
}
