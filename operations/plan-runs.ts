import type { KeyPrincipal } from './principal';
import { assertPlanAllows } from '../db/repositories/plans';
import type { Db } from '../db/knex';
import type { ModeRecord } from '../domain/modes';
import { assertPlanPermits } from '../domain/plan-rules';
import { CERTIFICATION, type RunSpec } from '../domain/runs';

/**
 * Runs billed to a plan (issue 38 item 12, spec 02: "a connected app that signs in pays real cost with no mode fee";
 * docs/plans.md). A connected app's test run or certification is launched by the signed-in person on a mode their
 * organisation owns (403 `mode_not_owned`, as every run), within the plan's tiers and modes (403
 * `tier_not_permitted`), priced at real engine cost (its quotes carry no platform or mode fee: `callQuoteInput`'s
 * `realCostOnly`), and charged to the person's plan for the month (402 `plan_limit_reached`), never to the
 * organisation's balance. The run's row names the plan (`runs.plan_person_id`); its refunds give the allowance back
 * through the run's own refund (`plan_month_used` counts billed − refunded).
 */

/** 403 `tier_not_permitted` when the run seats a tier (or uses a mode) the caller's plan does not include. */
export function assertPlanPermitsRun(auth: KeyPrincipal, mode: ModeRecord, model: string, spec: Pick<RunSpec, 'tiers'>): void {
  if (!auth.app) return;
  for (const tier of spec.tiers) assertPlanPermits(auth.app.plan, { mode, model, tier });
}

/**
 * A certification on a plan: its 150 questions at the real engine cost a plan's test run of them bills (25% off each
 * question's real cost), never more than the $50 flat price every other caller pays. The flat price is what the
 * service asks for the certification, not its cost, so a plan that pays real cost pays the questions' cost.
 */
export function planCertificationMicros(questionsMicros: number): number {
  return Math.min(questionsMicros, CERTIFICATION.priceMicros);
}

/**
 * 402 `plan_limit_reached` before anything starts when the run's price would pass what is left of the plan's month.
 * A read only: the run's admission (`holdPlanRun`, under the person's lock) stays the authority.
 */
export async function assertPlanAffordsRun(db: Db, auth: KeyPrincipal, billedMicros: number): Promise<void> {
  if (auth.app) await assertPlanAllows(db, auth.app.personId, BigInt(billedMicros));
}

/** Who pays the run a launch writes: the signed-in person's plan on a connected app, else the organisation. */
export function planPayerOf(auth: KeyPrincipal): { planPersonId: string } | Record<string, never> {
  return auth.app ? { planPersonId: auth.app.personId } : {};
}
