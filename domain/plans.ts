import type { Scope } from './api-keys';
import type { Tier } from './modes';

/**
 * What a connected app may ask for: deliberating and what goes with it, and runs billed to the person's plan (issue
 * 38 item 12). Authoring stays with API keys. A grant keeps the scopes it was given; a new sign-in may ask for these.
 */
export const OAUTH_SCOPES = ['completions', 'estimate', 'models', 'receipts', 'tests', 'certify'] as const satisfies readonly Scope[];

/**
 * Plans for people signed in through connected apps (spec 01 item 7, DESIGN §15): which tiers and modes they may
 * use, a monthly allowance of real engine cost, and deliberations in flight per person.
 */
export interface Plan {
  id: string;
  name: string;
  /** Tiers a signed-in person may ask for; another is 403 `tier_not_permitted`. */
  tiers: Tier[];
  /** Mode tickers (or ids) the plan allows; null = every mode the organisation is entitled to. */
  modes: string[] | null;
  /** Real engine cost a person may spend in a calendar month (UTC), in micro-dollars; over it, 402 `plan_limit_reached`. */
  monthlyAllowanceMicros: number;
  /** Deliberations in flight per person; over it, 429 `too_many_concurrent_requests`. */
  maxInFlight: number;
}

/** Who a connected app acts for: a person in one organisation, through one OAuth grant. */
export interface AppPrincipal {
  personId: string;
  clientId: string;
  grantId: string;
  plan: Plan;
}

/** An OAuth grant's account: a person acting in one organisation, chosen at consent. */
export function accountIdOf(personId: string, orgId: string): string {
  return `${personId}:${orgId}`;
}

export function parseAccountId(accountId: string): { personId: string; orgId: string } | undefined {
  const [personId, orgId, ...rest] = accountId.split(':');
  return personId && orgId && rest.length === 0 ? { personId, orgId } : undefined;
}
