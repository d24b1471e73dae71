import type { Knex } from 'knex';

/**
 * Plans of people signed in through connected apps (spec 01 item 7 and billing rule 11, DESIGN §15):
 * - `plans`: the tiers and modes a plan permits, its monthly allowance of real engine cost and its deliberations in
 *   flight per person; seeded with `free`, `plus` and `pro`;
 * - `person_plans`: the plan an operator assigned; a person without a row is on `free`;
 * - `plan_usage`: the plans' ledger, one row per request: its hold, then its charge (settled) or nothing (released).
 *   Its period is the UTC month the hold was taken in, so every figure of a month is a sum over its rows.
 * The allowance holds under any concurrency in `hold_plan_charge`, the one statement of the rule.
 */

/** Seeded plans; operators may edit the rows (the code reads them, never these constants). */
const SEED = [
  { id: 'free', name: 'Free', tiers: ['experience'], monthly_allowance_micros: 1_000_000, max_in_flight: 1 },
  { id: 'plus', name: 'Plus', tiers: ['experience', 'plus'], monthly_allowance_micros: 20_000_000, max_in_flight: 3 },
  { id: 'pro', name: 'Pro', tiers: ['experience', 'plus', 'pro'], monthly_allowance_micros: 100_000_000, max_in_flight: 5 },
];

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('plans', (t) => {
    t.text('id').primary();
    t.text('name').notNullable();
    t.specificType('tiers', 'text[]').notNullable();
    // null = every mode the organisation is entitled to.
    t.specificType('modes', 'text[]');
    t.bigInteger('monthly_allowance_micros').notNullable();
    t.integer('max_in_flight').notNullable();
    t.check(
      "tiers <@ array['experience','plus','pro']::text[] and cardinality(tiers) > 0 and monthly_allowance_micros >= 0 and max_in_flight > 0",
      [],
      'plans_limits_check',
    );
  });
  await knex('plans').insert(SEED.map((p) => ({ ...p, modes: null })));

  await knex.schema.createTable('person_plans', (t) => {
    t.text('person_id').primary().references('people.id').onDelete('CASCADE');
    t.text('plan_id').notNullable().references('plans.id');
    t.timestamp('assigned_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  await knex.schema.createTable('plan_usage', (t) => {
    // Request ids are unique across organisations (`req_` + 24 random hex): one row per request, ever.
    t.text('request_id').primary();
    t.text('org_id').notNullable().references('organisations.id').onDelete('CASCADE');
    t.text('person_id').notNullable().references('people.id').onDelete('CASCADE');
    t.text('plan_id').notNullable().references('plans.id');
    t.date('period').notNullable();
    t.text('state').notNullable();
    t.bigInteger('held_micros').notNullable();
    t.bigInteger('charged_micros').notNullable().defaultTo(0);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.check("state in ('held','settled','released')", [], 'plan_usage_state_check');
    t.check("held_micros >= 0 and charged_micros >= 0 and (state = 'settled' or charged_micros = 0)", [], 'plan_usage_amounts_check');
    t.index(['person_id', 'period']);
  });

  // What a person has used of a month: charges settled plus holds of calls in flight (a row is one or the other,
  // so a settle turning a hold into a charge is never counted twice).
  await knex.raw(`
    create function plan_month_used(p_person text, p_period date) returns bigint
    language sql stable as $$
      select coalesce(sum(case state when 'settled' then charged_micros when 'held' then held_micros else 0 end), 0)::bigint
        from plan_usage where person_id = p_person and period = p_period
    $$
  `);
  /*
   * Takes a call's hold on the person's current plan: 'held', 'exists' (this request already holds: a retried
   * activity changes nothing), or 'plan_limit_reached' when used + hold would pass the allowance. The advisory lock
   * serialises one person's holds until the calling transaction ends (as acquire_concurrency_lease does per
   * organisation), and VOLATILE plpgsql reads each statement with a fresh snapshot, so the sum after the lock sees
   * every hold committed before it: concurrent holds never pass the allowance together.
   */
  await knex.raw(`
    create function hold_plan_charge(p_request text, p_org text, p_person text, p_amount bigint) returns text
    language plpgsql volatile as $$
    declare
      v_period date := date_trunc('month', now() at time zone 'UTC')::date;
      v_plan record;
    begin
      perform pg_advisory_xact_lock(hashtext('plan:' || p_person));
      if exists (select 1 from plan_usage where request_id = p_request) then return 'exists'; end if;
      select id, monthly_allowance_micros into v_plan from plans
       where id = coalesce((select plan_id from person_plans where person_id = p_person), 'free');
      if plan_month_used(p_person, v_period) + p_amount > v_plan.monthly_allowance_micros then
        return 'plan_limit_reached';
      end if;
      insert into plan_usage (request_id, org_id, person_id, plan_id, period, state, held_micros)
        values (p_request, p_org, p_person, v_plan.id, v_period, 'held', p_amount);
      return 'held';
    end $$
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop function hold_plan_charge(text, text, text, bigint)');
  await knex.raw('drop function plan_month_used(text, date)');
  for (const table of ['plan_usage', 'person_plans', 'plans']) await knex.schema.dropTable(table);
}
