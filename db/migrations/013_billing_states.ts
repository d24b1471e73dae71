import type { Knex } from 'knex';

/** Ledger kinds that make up what an organisation spent: charges, less what was credited back on them. */
const SPEND_KINDS = "('charge','test_run_charge','cap_credit','run_refund')";

/**
 * Organisation billing states (spec 01's 402 codes, DESIGN §14), set by operators:
 * - `billing`: `active`, or `not_configured` → `no_billing_configured` for any billed work;
 * - `activation_allowance_micros`: what an organisation not yet activated (`activated_at` null) may spend in total,
 *   then `verification_required`; null = no allowance applies;
 * - `monthly_quota_micros`: what it may spend per calendar month (UTC), then `quota_exceeded`; null = no quota.
 * Spend is read from the append-only ledger.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('organisations', (t) => {
    t.text('billing').notNullable().defaultTo('active');
    t.bigInteger('activation_allowance_micros');
    t.timestamp('activated_at', { useTz: true });
    t.bigInteger('monthly_quota_micros');
    t.check("billing in ('active','not_configured')", [], 'organisations_billing_check');
    t.check(
      '(activation_allowance_micros is null or activation_allowance_micros >= 0) and (monthly_quota_micros is null or monthly_quota_micros >= 0)',
      [],
      'organisations_billing_limits_check',
    );
  });
  // A month's spend is read on every billed call of an organisation with a quota: an index-only range scan.
  await knex.raw(
    `create index ledger_entries_spend_idx on ledger_entries (org_id, created_at) include (amount_micros) where kind in ${SPEND_KINDS}`,
  );
  // What an organisation spent since a moment: charges, less what was credited back on them (cap credits, refunds).
  await knex.raw(`
    create function billing_spent(p_org_id text, p_since timestamptz) returns bigint
    language sql stable as $$
      select coalesce(-sum(amount_micros), 0)::bigint from ledger_entries
       where org_id = p_org_id and kind in ${SPEND_KINDS} and created_at >= p_since
    $$
  `);
  /*
   * The one statement of the rule, used by the API's check before a call starts and inside the conditional UPDATE
   * that takes the money (ledger.postEntries), so it holds under any concurrency. VOLATILE plpgsql on purpose: each
   * query in it takes a fresh snapshot, so when the UPDATE waited on the balance row and re-checks it, the spend read
   * here includes what the transaction it waited for charged. Money held for calls in flight counts as spent: billed
   * work is admitted only when its whole hold fits, as with the balance. The common case is one primary-key read.
   */
  await knex.raw(`
    create function billing_refusal(p_org_id text, p_amount_micros bigint) returns text
    language plpgsql volatile as $$
    declare
      o record;
      total_used bigint;
      month_used bigint;
    begin
      select billing, activation_allowance_micros, activated_at, monthly_quota_micros into o
        from organisations where id = p_org_id;
      if not found then return null; end if;
      if o.billing = 'not_configured' then return 'no_billing_configured'; end if;
      if o.monthly_quota_micros is null and (o.activation_allowance_micros is null or o.activated_at is not null) then
        return null;
      end if;
      -- Held and spent from one snapshot: a settle turns a hold into a charge in one transaction, and reading the
      -- two in separate statements could count that money twice (or not at all).
      select b.reserved_micros + billing_spent(p_org_id, '-infinity'),
             b.reserved_micros + billing_spent(p_org_id, date_trunc('month', now(), 'UTC'))
        into total_used, month_used
        from balances b where b.org_id = p_org_id;
      if o.activated_at is null and o.activation_allowance_micros is not null
         and total_used + p_amount_micros > o.activation_allowance_micros then
        return 'verification_required';
      end if;
      if o.monthly_quota_micros is not null and month_used + p_amount_micros > o.monthly_quota_micros then
        return 'quota_exceeded';
      end if;
      return null;
    end $$
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop function billing_refusal(text, bigint)');
  await knex.raw('drop function billing_spent(text, timestamptz)');
  await knex.raw('drop index ledger_entries_spend_idx');
  await knex.schema.alterTable('organisations', (t) => {
    t.dropChecks(['organisations_billing_check', 'organisations_billing_limits_check']);
    t.dropColumns('billing', 'activation_allowance_micros', 'activated_at', 'monthly_quota_micros');
  });
}
