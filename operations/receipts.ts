import { listReceipts, type ReceiptLine } from '../db/repositories/receipts';
import { getReceipt } from '../db/repositories/requests';
import type { Outcome } from '../domain/outcome';
import { isStorableText } from '../domain/storable-text';
import { orgActedOn, type Principal } from './principal';
import type { StoreDeps } from './deps';

/** The organisation's receipts as the console lists them (the API's `GET /v1/receipts/{id}` is `receipt.ts`). */

/** A page of the organisation's receipts, newest first. */
export async function receiptsOf(deps: StoreDeps, principal: Principal, page: { limit: number; offset: number }): Promise<ReceiptLine[]> {
  return listReceipts(deps.db, { orgId: orgActedOn(principal), limit: page.limit, offset: page.offset });
}

/** One call of the organisation: its outcome, or why it has none; undefined for another organisation's or no call. */
export async function receiptOf(
  deps: StoreDeps,
  principal: Principal,
  requestId: string,
): Promise<{ available: true; outcome: Outcome } | { available: false; reason: string; status: string } | undefined> {
  return isStorableText(requestId) ? getReceipt(deps.db, orgActedOn(principal), requestId) : undefined;
}
