import {
  capCreditSince,
  getBalance,
  ledgerTotals,
  listLedger,
  topUp,
  type Balance,
  type LedgerEntry,
  type LedgerKindTotal,
} from '../db/repositories/ledger';
import { trialStanding, type TrialStanding } from '../db/repositories/trial-credit';
import { usdToMicros } from '../domain/money';
import { trialEndsAt } from '../domain/trial';
import { planUsage, type PlanUsage } from '../db/repositories/plans';
import { orgActedOn, type Principal } from './principal';
import type { Config } from '../infra/config';
import type { OperationDeps, StoreDeps } from './deps';

/** The organisation's balance and ledger (DESIGN §7), and top-ups. */

/** The balance (reserved and available) and the latest `limit` ledger entries. */
export async function balanceOf(
  deps: StoreDeps,
  principal: Principal,
  input: { orgId?: string; limit: number },
): Promise<{ balance: Balance; entries: LedgerEntry[] }> {
  const orgId = orgActedOn(principal, input.orgId);
  const [balance, entries] = await Promise.all([getBalance(deps.db, orgId), listLedger(deps.db, orgId, input.limit)]);
  return { balance, entries };
}

/** What the organisation holds: its balance (held and available) and its trial credit, with when the trial ends. */
export interface AccountBalance {
  balance: Balance;
  trial: TrialStanding & { endsAt: Date };
}

/** `GET /v1/balance` and the console's overview read it the same way. */
export async function accountBalance(deps: StoreDeps, orgId: string): Promise<AccountBalance> {
  const [balance, trial] = await Promise.all([getBalance(deps.db, orgId), trialStanding(deps.db, orgId)]);
  return { balance, trial: { ...trial, endsAt: trialEndsAt(trial.startedAt) } };
}

/** The cap credit an organisation may receive per UTC day unless QUORUM_CAP_CREDIT_DAILY_USD says otherwise. */
export const DEFAULT_CAP_CREDIT_DAILY_USD = '5';

/** The deployment's daily cap-credit limit per organisation (Form B; see operations/completion.ts). */
export function capCreditDailyLimitMicros(config: Pick<Config, 'QUORUM_CAP_CREDIT_DAILY_USD'>): bigint {
  return usdToMicros(config.QUORUM_CAP_CREDIT_DAILY_USD ?? DEFAULT_CAP_CREDIT_DAILY_USD);
}

/** The cap credit the organisation has received today (since midnight UTC), and the day's limit. */
export interface CapCreditDay {
  receivedMicros: bigint;
  limitMicros: bigint;
}

export async function capCreditToday(deps: Pick<OperationDeps, 'db' | 'config'>, orgId: string): Promise<CapCreditDay> {
  const now = new Date();
  const midnight = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
  return { receivedMicros: await capCreditSince(deps.db, orgId, midnight), limitMicros: capCreditDailyLimitMicros(deps.config) };
}

/**
 * A signed-in person's account overview: the organisation's balance, trial and ledger, the cap credit it received today,
 * and the person's own billing plan's usage.
 */
export async function accountOverview(
  deps: Pick<OperationDeps, 'db' | 'config'>,
  principal: Principal & { via: 'person' },
): Promise<AccountBalance & { entries: LedgerEntry[]; capCredit: CapCreditDay; usage: PlanUsage }> {
  const orgId = orgActedOn(principal);
  const [{ balance, trial }, entries, capCredit, usage] = await Promise.all([
    accountBalance(deps, orgId),
    listLedger(deps.db, orgId, 50),
    capCreditToday(deps, orgId),
    planUsage(deps.db, principal.person.id),
  ]);
  return { balance, trial, entries, capCredit, usage };
}

/**
 * Adds balance: the operator once payment is received, or in development a person themselves (the console offers it
 * only when self top-up is on). The new balance.
 */
export async function addBalance(
  deps: StoreDeps,
  principal: Principal,
  input: { orgId?: string; amountMicros: bigint; note: string },
): Promise<Balance> {
  return topUp(deps.db, { orgId: orgActedOn(principal, input.orgId), amountMicros: input.amountMicros, note: input.note });
}

/**
 * Every organisation's ledger summed by kind: the service's money at a glance, as `/metrics` shows it. One aggregate
 * over the whole ledger, so the scrape caches it.
 */
export async function serviceLedgerTotals(deps: StoreDeps): Promise<LedgerKindTotal[]> {
  return ledgerTotals(deps.db);
}
