import { getBalance, listLedger, topUp, type Balance, type LedgerEntry } from '../db/repositories/ledger';
import { planUsage, type PlanUsage } from '../db/repositories/plans';
import { orgActedOn, type Principal } from './principal';
import type { StoreDeps } from './deps';

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

/** A signed-in person's account overview: the organisation's balance and ledger, and their own billing plan's usage. */
export async function accountOverview(
  deps: StoreDeps,
  principal: Principal & { via: 'person' },
): Promise<{ balance: Balance; entries: LedgerEntry[]; usage: PlanUsage }> {
  const [{ balance, entries }, usage] = await Promise.all([
    balanceOf(deps, principal, { limit: 50 }),
    planUsage(deps.db, principal.person.id),
  ]);
  return { balance, entries, usage };
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
