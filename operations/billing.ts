import { getBilling, setBilling, type BillingChange, type OrganisationBilling } from '../db/repositories/billing';
import { getBalance, type Balance } from '../db/repositories/ledger';
import type { Principal } from './principal';
import type { StoreDeps } from './deps';

/** Organisation billing states (DESIGN §14), set by operators only. */

/** The organisation's billing settings and its balance. */
export async function billingOf(
  deps: StoreDeps,
  _principal: Principal & { via: 'operator' },
  orgId: string,
): Promise<{ billing: OrganisationBilling; balance: Balance }> {
  const billing = await getBilling(deps.db, orgId);
  return { billing, balance: await getBalance(deps.db, orgId) };
}

/** Changes one billing setting; the settings it leaves. */
export async function changeBilling(
  deps: StoreDeps,
  principal: Principal & { via: 'operator' },
  orgId: string,
  change: BillingChange,
): Promise<{ billing: OrganisationBilling; balance: Balance }> {
  await setBilling(deps.db, orgId, change);
  return billingOf(deps, principal, orgId);
}
