import { z } from 'zod';
import { QuorumError } from '../../domain/errors';
import { microsToDecimal } from '../../domain/money';
import { TIERS } from '../../domain/modes';
import { planPeriod } from '../../domain/plan-rules';
import type { Plan } from '../../domain/plans';
import type { DbOrTrx } from './shared';

/**
 * Plans and their ledger (migration 014, DESIGN §15). A connected app's call holds on the person's plan before
 * anything runs, then settles its real engine cost or releases the hold; each step is idempotent by request id, so a
 * retried activity or settle changes nothing, and `plan_usage` reconciles every figure a person is shown.
 */

/** A person without an assigned plan is on this one. */
export const DEFAULT_PLAN = 'free';

const PlanRow = z.object({
  id: z.string(),
  name: z.string(),
  tiers: z.array(z.enum(TIERS)).min(1),
  modes: z.array(z.string()).nullable(),
  // int8 arrives as a bigint (db/knex.ts); an allowance is far below 2^53 micro-dollars.
  monthly_allowance_micros: z.bigint().transform(Number),
  max_in_flight: z.number().int().positive(),
});

const PLAN_COLUMNS = ['p.id', 'p.name', 'p.tiers', 'p.modes', 'p.monthly_allowance_micros', 'p.max_in_flight'] as const;

export function toPlan(row: unknown): Plan {
  const r = PlanRow.parse(row);
  return {
    id: r.id,
    name: r.name,
    tiers: r.tiers,
    modes: r.modes,
    monthlyAllowanceMicros: r.monthly_allowance_micros,
    maxInFlight: r.max_in_flight,
  };
}

/** The SQL of "this person's plan": the assigned one, else `free`. Joined by `authenticateApp` into its one query. */
export const planOfPersonSql = `coalesce((select pp.plan_id from person_plans pp where pp.person_id = ?), '${DEFAULT_PLAN}')`;

export async function listPlans(db: DbOrTrx): Promise<Plan[]> {
  const rows: unknown[] = await db('plans as p')
    .orderBy('p.monthly_allowance_micros')
    .select(...PLAN_COLUMNS);
  return rows.map(toPlan);
}

export async function planOf(db: DbOrTrx, personId: string): Promise<Plan> {
  const row: unknown = await db('plans as p')
    .whereRaw(`p.id = ${planOfPersonSql}`, [personId])
    .first(...PLAN_COLUMNS);
  if (!row) throw new QuorumError('internal_error', `the default plan \`${DEFAULT_PLAN}\` is missing`);
  return toPlan(row);
}

/** Puts a person on a plan from now on (calls already held keep the plan they held on). */
export async function assignPlan(db: DbOrTrx, input: { personId: string; planId: string }): Promise<Plan> {
  const plan = (await listPlans(db)).find((p) => p.id === input.planId);
  if (!plan) throw new QuorumError('not_found', `no plan \`${input.planId}\``, { param: 'plan' });
  await db('person_plans')
    .insert({ person_id: input.personId, plan_id: plan.id })
    .onConflict('person_id')
    .merge({ plan_id: plan.id, assigned_at: db.fn.now() })
    .catch((err: unknown) => {
      if ((err as { code?: unknown }).code === '23503') throw new QuorumError('not_found', `no person ${input.personId}`);
      throw err;
    });
  return plan;
}

export interface PlanUsage {
  plan: Plan;
  /** The month (UTC), `YYYY-MM-01`. */
  period: string;
  /** Real engine cost charged to the plan this month: calls settled, and runs at what they kept (billed − refunded). */
  chargedMicros: bigint;
  /** Held by calls in flight. */
  heldMicros: bigint;
  /** What is left of the allowance: allowance − charged − held, never below 0. */
  remainingMicros: bigint;
  /** Calls charged this month. */
  calls: number;
  /** Runs (tests, certifications) charged this month, and what they kept of their charge. */
  runs: number;
  runsMicros: bigint;
}

/** The person's plan and this month's use of it, summed from the plan's ledger. */
export async function planUsage(db: DbOrTrx, personId: string, now: Date = new Date()): Promise<PlanUsage> {
  const period = planPeriod(now);
  const [plan, sums, runs] = await Promise.all([
    planOf(db, personId),
    db('plan_usage')
      .where({ person_id: personId, period })
      .first(
        db.raw("coalesce(sum(charged_micros) filter (where state = 'settled'), 0)::bigint as charged"),
        db.raw("coalesce(sum(held_micros) filter (where state = 'held'), 0)::bigint as held"),
        db.raw("count(*) filter (where state = 'settled')::int as calls"),
      ) as Promise<{ charged: bigint; held: bigint; calls: number }>,
    db('runs')
      .where({ plan_person_id: personId, plan_period: period })
      .first(db.raw('coalesce(sum(billed_micros - refunded_micros), 0)::bigint as kept'), db.raw('count(*)::int as runs')) as Promise<{
      kept: bigint;
      runs: number;
    }>,
  ]);
  const charged = sums.charged + runs.kept;
  const left = BigInt(plan.monthlyAllowanceMicros) - charged - sums.held;
  return {
    plan,
    period,
    chargedMicros: charged,
    heldMicros: sums.held,
    remainingMicros: left > 0n ? left : 0n,
    calls: sums.calls,
    runs: runs.runs,
    runsMicros: runs.kept,
  };
}

function planLimitReached(plan: Pick<Plan, 'name' | 'monthlyAllowanceMicros'>): QuorumError {
  return new QuorumError(
    'plan_limit_reached',
    `This month's allowance of the ${plan.name} plan ($${microsToDecimal(BigInt(plan.monthlyAllowanceMicros))} of engine cost) does not cover this call; it renews on the first of next month (UTC).`,
  );
}

/**
 * Throws `plan_limit_reached` when holding `amountMicros` would pass the person's allowance this month. A read only:
 * `holdPlanCharge` stays the authority (another call may hold in between); this lets a refused call fail before it starts.
 */
export async function assertPlanAllows(db: DbOrTrx, personId: string, amountMicros: bigint): Promise<void> {
  const usage = await planUsage(db, personId);
  if (usage.remainingMicros < amountMicros || usage.remainingMicros === 0n) throw planLimitReached(usage.plan);
}

/**
 * Charges a run of `amountMicros` to the person's plan this month (issue 38 item 12), or throws `plan_limit_reached`
 * when it would pass the allowance. Called in the transaction that writes the run, it takes the lock
 * `hold_plan_charge` takes, so runs and calls of one person never pass the allowance together; `plan_month_used`
 * counts the run from its row. Returns the plan and month the run is charged to.
 */
export async function holdPlanRun(trx: DbOrTrx, personId: string, amountMicros: bigint): Promise<{ planId: string; period: string }> {
  await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [`plan:${personId}`]);
  const { rows } = await trx.raw<{ rows: { period: string; used: bigint }[] }>(
    `select to_char(m.period, 'YYYY-MM-DD') as period, plan_month_used(?, m.period) as used
       from (select date_trunc('month', now() at time zone 'UTC')::date as period) m`,
    [personId],
  );
  const plan = await planOf(trx, personId);
  if (rows[0].used + amountMicros > BigInt(plan.monthlyAllowanceMicros)) throw planLimitReached(plan);
  return { planId: plan.id, period: rows[0].period };
}

/**
 * Holds `amountMicros` of the person's plan for a call (`hold_plan_charge`, migration 014), or throws
 * `plan_limit_reached`. Idempotent per request id: a repeated hold changes nothing.
 */
export async function holdPlanCharge(
  db: DbOrTrx,
  input: { requestId: string; orgId: string; personId: string; amountMicros: bigint },
): Promise<void> {
  if (input.amountMicros < 0n) throw new QuorumError('invalid_request', 'amountMicros must not be negative', { param: 'amountMicros' });
  const { rows } = await db.raw<{ rows: { result: 'held' | 'exists' | 'plan_limit_reached' }[] }>(
    'select hold_plan_charge(?, ?, ?, ?) as result',
    [input.requestId, input.orgId, input.personId, input.amountMicros.toString()],
  );
  if (rows[0].result === 'plan_limit_reached') throw planLimitReached(await planOf(db, input.personId));
}

/**
 * Charges a call's real cost to the plan it held on, in place of its hold (held or released: a call settled again
 * after its hold was given back is still charged once). Idempotent: a second settle changes nothing and reports
 * `alreadySettled`. The allowance refuses holds, never a charge: the engines already ran.
 */
export async function settlePlanCharge(
  db: DbOrTrx,
  input: { requestId: string; chargeMicros: bigint },
): Promise<{ alreadySettled: boolean }> {
  if (input.chargeMicros < 0n) throw new QuorumError('invalid_request', 'chargeMicros must not be negative', { param: 'chargeMicros' });
  const updated = await db('plan_usage')
    .where({ request_id: input.requestId })
    .whereNot({ state: 'settled' })
    .update({ state: 'settled', charged_micros: input.chargeMicros.toString(), updated_at: db.fn.now() });
  if (updated > 0) return { alreadySettled: false };
  const row = (await db('plan_usage').where({ request_id: input.requestId }).first('state')) as { state: string } | undefined;
  if (!row) throw new QuorumError('cost_unreadable', `no plan hold for ${input.requestId}; nothing was charged`);
  return { alreadySettled: true };
}

/** Gives a held plan charge back (a failed or unbilled call). Idempotent; a no-op once settled or released, or without a hold. */
export async function releasePlanCharge(db: DbOrTrx, input: { requestId: string }): Promise<void> {
  await db('plan_usage').where({ request_id: input.requestId, state: 'held' }).update({ state: 'released', updated_at: db.fn.now() });
}

export interface PlanUsageRow {
  requestId: string;
  orgId: string;
  personId: string;
  planId: string;
  period: string;
  state: 'held' | 'settled' | 'released';
  heldMicros: bigint;
  chargedMicros: bigint;
}

/** One request's row of the plans' ledger (for reconciliation and tests). */
export async function planUsageRow(db: DbOrTrx, requestId: string): Promise<PlanUsageRow | undefined> {
  const row = (await db('plan_usage')
    .where({ request_id: requestId })
    .first(
      'request_id',
      'org_id',
      'person_id',
      'plan_id',
      db.raw("to_char(period, 'YYYY-MM-DD') as period"),
      'state',
      'held_micros',
      'charged_micros',
    )) as
    | {
        request_id: string;
        org_id: string;
        person_id: string;
        plan_id: string;
        period: string;
        state: PlanUsageRow['state'];
        held_micros: bigint;
        charged_micros: bigint;
      }
    | undefined;
  return (
    row && {
      requestId: row.request_id,
      orgId: row.org_id,
      personId: row.person_id,
      planId: row.plan_id,
      period: row.period,
      state: row.state,
      heldMicros: row.held_micros,
      chargedMicros: row.charged_micros,
    }
  );
}
