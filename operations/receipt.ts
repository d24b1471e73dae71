import type { KeyPrincipal } from './principal';
import { isEstimate, recordRefusal, refusalCode } from '../db/repositories/limits';
import { getReceipt, type CallerFields, type ReceiptRecord } from '../db/repositories/requests';
import { QuorumError } from '../domain/errors';
import type { Outcome } from '../domain/outcome';
import { isStorableText } from '../domain/storable-text';
import type { OperationDeps, StoreDeps } from './deps';

export type { CallerFields };

const ESTIMATE_REASON = 'The request was an estimate; estimates run no deliberation.';

export type ReceiptView = (
  | { available: true; outcome: Outcome; includeTranscript: boolean }
  | { available: false; requestId: string; reason: string; status: string }
) & {
  /** The call's OpenAI `user` and `metadata` (issue 40), when it ran and its caller sent them. */
  caller?: CallerFields;
};

export function missingRequestId(): QuorumError {
  return new QuorumError('missing_request_id', 'Put the request id in the path: /v1/receipts/{request_id}.', { param: 'request_id' });
}

/** `include_transcript` as a query string or a tool argument: absent, `true`/`false` or `1`/`0`. */
export function parseIncludeTranscript(raw: unknown): boolean {
  if (raw === undefined || raw === false || raw === 'false' || raw === '0') return false;
  if (raw === true || raw === 'true' || raw === '1') return true;
  throw new QuorumError('invalid_request', '`include_transcript` must be `true` or `false`.', { param: 'include_transcript' });
}

/** A call's record as the receipt's readers show it. */
export function receiptView(requestId: string, found: ReceiptRecord, includeTranscript: boolean): ReceiptView {
  if (found.available) return { available: true, outcome: found.outcome, includeTranscript, caller: found.caller };
  return { available: false, requestId, reason: found.reason, status: found.status, caller: found.caller };
}

/** A past call's receipt, scoped to the caller's organisation: another one's id is simply not found. */
export async function readReceipt(
  deps: OperationDeps,
  auth: KeyPrincipal,
  input: { requestId: string; includeTranscript?: unknown },
): Promise<ReceiptView> {
  const { requestId } = input;
  if (!requestId.trim()) throw missingRequestId();
  const includeTranscript = parseIncludeTranscript(input.includeTranscript);
  const notFound = new QuorumError(
    'receipt_not_found',
    `No receipt \`${JSON.stringify(requestId).slice(1, -1)}\` under this organisation.`,
    {
      param: 'request_id',
    },
  );
  // Looked up exactly as sent (`req_… ` is not `req_…`); text no id can hold (a NUL) is not found without asking.
  if (!isStorableText(requestId)) throw notFound;
  const found = await getReceipt(deps.db, auth.orgId, requestId);
  if (found) return receiptView(requestId, found, includeTranscript);
  if (await isEstimate(deps.db, auth.orgId, requestId)) return { available: false, requestId, reason: ESTIMATE_REASON, status: 'estimate' };
  const refused = await refusalCode(deps.db, auth.orgId, requestId);
  if (refused) {
    return {
      available: false,
      requestId,
      reason: `The request was refused before it ran (${refused}); nothing was billed.`,
      status: 'failed',
    };
  }
  throw notFound;
}

/**
 * A call refused before it ran, under the id it was given (`req_…`, `est_…`), so `readReceipt` of that id says so. A
 * repeat of the id is ignored.
 */
export async function recordRefusedRequest(deps: StoreDeps, orgId: string, requestId: string, code: string): Promise<void> {
  await recordRefusal(deps.db, orgId, requestId, code);
}
