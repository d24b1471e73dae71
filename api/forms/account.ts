import type { LedgerEntry } from '../../db/repositories/ledger';
import type { UsageRow } from '../../db/repositories/usage';
import type { Form } from '../../domain/form';
import { microsToUsd } from '../../domain/money';
import type { AccountBalance } from '../../operations/ledger';
import type { CallPage, LedgerPage } from '../../operations/call-list';
import { requestIdOf } from '../../operations/call-list';
import type { CallerFields, ReceiptView } from '../../operations/receipt';
import type { UsagePage } from '../../operations/usage';
import type { JsonObject } from './json';
import type { FormSerialiser } from './shared';

/**
 * The account's reads (issue 41 items 1 and 2) as JSON: usage, balance and ledger the same in both Forms (beyond the
 * spec, in the shapes of OpenAI's Usage API and lists); a call listed as `GET /v1/receipts/{id}` shows it in this Form.
 */

const seconds = (d: Date): number => Math.floor(d.getTime() / 1000);

/** One group of one bucket: every dimension, null unless grouped by (as OpenAI's usage results are). */
function usageResult(row: UsageRow, form: Form): JsonObject {
  return {
    object: 'usage.result',
    mode: row.modeId === undefined ? null : form === 'B' ? (row.ticker ?? row.modeId) : row.modeId,
    api_key_id: row.keyId ?? null,
    tier: row.tier ?? null,
    lane: row.lane ?? null,
    user: row.user ?? null,
    metadata: row.metadata ?? null,
    calls: row.calls,
    input_tokens: row.inputTokens,
    output_tokens: row.outputTokens,
    engine_cost_usd: microsToUsd(row.engineCostMicros),
    platform_fee_usd: microsToUsd(row.platformFeeMicros),
    mode_fee_usd: microsToUsd(row.modeFeeMicros),
    cap_credit_usd: microsToUsd(row.capCreditMicros),
    billed_usd: microsToUsd(row.chargedMicros - row.capCreditMicros),
  };
}

export function usageBody(page: UsagePage, form: Form): JsonObject {
  return {
    object: 'page',
    data: page.buckets.map((b) => ({
      object: 'bucket',
      start_time: seconds(b.start),
      end_time: seconds(b.end),
      results: b.rows.map((r) => usageResult(r, form)),
    })),
    has_more: page.nextPage !== null,
    next_page: page.nextPage,
  };
}

export function balanceBody({ balance, trial }: AccountBalance): JsonObject {
  return {
    object: 'balance',
    balance_usd: microsToUsd(balance.balanceMicros),
    held_usd: microsToUsd(balance.reservedMicros),
    available_usd: microsToUsd(balance.availableMicros),
    trial: {
      credit_usd: microsToUsd(trial.creditMicros),
      unused_usd: microsToUsd(trial.unusedMicros),
      started_at: seconds(trial.startedAt),
      expires_at: seconds(trial.endsAt),
      expired_at: trial.expiredAt && seconds(trial.expiredAt),
    },
  };
}

export function ledgerEntryJson(e: LedgerEntry): JsonObject {
  return {
    object: 'ledger.entry',
    id: e.id,
    kind: e.kind,
    amount_usd: microsToUsd(e.amountMicros),
    held_delta_usd: microsToUsd(e.reservedDeltaMicros),
    request_id: e.requestId,
    note: e.note,
    created_at: seconds(e.createdAt),
  };
}

/** OpenAI's list shape, as `GET /v1/runs` pages: the next page is `after=<last_id>`. */
function list(data: JsonObject[], ids: string[], hasMore: boolean): JsonObject {
  return { object: 'list', data, first_id: ids[0] ?? null, last_id: ids.at(-1) ?? null, has_more: hasMore };
}

export function ledgerBody(page: LedgerPage): JsonObject {
  return list(
    page.entries.map(ledgerEntryJson),
    page.entries.map((e) => e.id),
    page.hasMore,
  );
}

/** What `GET /v1/receipts/{id}` answers for the call in this Form, with its caller's `user` and `metadata` (when sent). */
export function receiptBody(serialiser: FormSerialiser, view: ReceiptView): JsonObject {
  const body = view.available
    ? serialiser.receipt(view.outcome, view.includeTranscript)
    : serialiser.noReceipt(view.requestId, view.reason, view.status);
  return withCallerFields(body, view.caller);
}

/** The call's OpenAI `user` and `metadata` beside what the receipt says (in `receipt` when there is one); only those sent. */
function withCallerFields(body: JsonObject, caller: CallerFields | undefined): JsonObject {
  const fields: JsonObject = {
    ...(caller?.endUser != null && { user: caller.endUser }),
    ...(caller?.metadata != null && { metadata: caller.metadata }),
  };
  if (Object.keys(fields).length === 0) return body;
  const receipt = body.receipt;
  if (receipt && typeof receipt === 'object' && !Array.isArray(receipt)) return { ...body, receipt: { ...receipt, ...fields } };
  return { ...body, ...fields };
}

/** A listed call: its id and status first (Form A's answer for a call without a receipt names neither), then its receipt's body. */
export function callJson(serialiser: FormSerialiser, view: ReceiptView): JsonObject {
  const status = view.available ? view.outcome.status : view.status;
  return { object: 'receipt', request_id: requestIdOf(view), status, ...receiptBody(serialiser, view) };
}

export function callsBody(serialiser: FormSerialiser, page: CallPage): JsonObject {
  return list(
    page.calls.map((c) => callJson(serialiser, c)),
    page.calls.map(requestIdOf),
    page.hasMore,
  );
}
