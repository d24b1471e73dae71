import { QuorumError } from './errors';
import { TIER_RANK, type ModeConfig, type Tier } from './modes';
import { laneFor, seatedTier } from './seat-assignment';
import type { Plan } from './plans';

/**
 * The rules a plan sets on a connected app's call (spec 01 item 7 and billing rule 11, DESIGN §15). Pure: the API
 * applies them before anything runs, the workflow carries the payer, Postgres holds the allowance.
 */

/**
 * The workflow input's payer of a connected app's call: the person's plan, at real engine cost. `holdMicros` is what
 * the plan holds while the call runs (a plan call has no ceiling to hold, see `worstCaseGatewayMicros`).
 */
export interface PlanPayer {
  kind: 'plan';
  personId: string;
  holdMicros: number;
}

/** Whether the plan permits the mode; `modes` names tickers or ids, null = every mode of the organisation. */
export function planPermitsMode(plan: Plan, mode: { id: string; ticker: string }): boolean {
  return plan.modes === null || plan.modes.includes(mode.id) || plan.modes.includes(mode.ticker);
}

/** The plan's highest tier. */
export function topTier(plan: Plan): Tier {
  return plan.tiers.reduce((top, t) => (TIER_RANK[t] > TIER_RANK[top] ? t : top), plan.tiers[0]);
}

/** 403 `tier_not_permitted` for a tier the plan does not include. */
export function assertTierPermitted(plan: Plan, tier: Tier): void {
  if (!plan.tiers.includes(tier))
    throw new QuorumError(
      'tier_not_permitted',
      `The ${plan.name} plan does not include the \`${tier}\` tier; it includes ${plan.tiers.map((t) => `\`${t}\``).join(', ')}.`,
      { param: 'tier' },
    );
}

/**
 * 403 `tier_not_permitted` for a mode or tier above the plan (spec: after the mode was resolved). The tier judged is
 * the highest whose engines the call may seat: an express-only call (the experience tier, or an express mode) seats
 * the experience row whatever tier was asked, so a plan of the experience tier may call an express mode on Form A,
 * which has no tier field.
 */
export function assertPlanPermits(
  plan: Plan,
  call: { mode: { id: string; ticker: string; config: ModeConfig }; model: string; tier: Tier },
): void {
  if (!planPermitsMode(plan, call.mode))
    throw new QuorumError('tier_not_permitted', `The ${plan.name} plan does not include the mode \`${call.model}\`.`, { param: 'model' });
  const { config } = call.mode;
  assertTierPermitted(plan, seatedTier(config, call.tier, laneFor(config, call.tier, { lane: 'panel' })));
}

/** A plan's month (UTC), as `plan_usage.period` stores it: the first day, `YYYY-MM-01`. */
export function planPeriod(now: Date): string {
  return `${now.toISOString().slice(0, 7)}-01`;
}
