import type { ErrorCode } from './errors';

/**
 * Organisation billing states (spec 01's 402 codes, DESIGN §14). The rule itself is the database's
 * `billing_refusal` (db/migrations/013_billing_states.ts), so the check and the conditional update that takes the
 * money cannot disagree; this module names its answers.
 */

/** An organisation's standing; a suspended one is refused on every edge (403 `org_suspended`). */
export type OrganisationStatus = 'active' | 'suspended';

export const BILLING = ['active', 'not_configured'] as const;
export type Billing = (typeof BILLING)[number];

/** What `billing_refusal` answers, in the order it checks them; each is refused before the balance is looked at. */
export const BILLING_REFUSALS = [
  'no_billing_configured',
  'verification_required',
  'quota_exceeded',
] as const satisfies readonly ErrorCode[];
export type BillingRefusal = (typeof BILLING_REFUSALS)[number];

export function isBillingRefusal(code: string): code is BillingRefusal {
  return (BILLING_REFUSALS as readonly string[]).includes(code);
}

export const BILLING_REFUSAL_MESSAGES: Readonly<Record<BillingRefusal, string>> = {
  no_billing_configured: 'This organisation has no billing set up, so nothing billable can run; nothing was charged.',
  verification_required: "This organisation's activation allowance is used; activate the organisation to continue. Nothing was charged.",
  quota_exceeded: "This organisation's monthly quota is used; it renews on the 1st (UTC). Nothing was charged.",
};

/** An organisation's billing settings as an operator sets them; money in micro-dollars. */
export interface BillingSettings {
  billing: Billing;
  /** Spend allowed before activation; null = no allowance applies. */
  activationAllowanceMicros: bigint | null;
  /** Once set, the allowance no longer applies. */
  activatedAt: Date | null;
  /** Spend allowed per calendar month (UTC); null = no quota. */
  monthlyQuotaMicros: bigint | null;
}
