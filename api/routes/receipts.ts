import type { Context } from 'koa';
import { isEstimate } from '../../db/repositories/limits';
import { getReceipt } from '../../db/repositories/requests';
import { QuorumError } from '../../domain/errors';
import { authOf } from '../middleware/gate';
import type { RouteDeps } from './context';

const ESTIMATE_REASON = 'The request was an estimate; estimates run no deliberation.';

function includeTranscript(ctx: Context): boolean {
  const raw = ctx.query.include_transcript;
  if (raw === undefined || raw === 'false' || raw === '0') return false;
  if (raw === 'true' || raw === '1') return true;
  throw new QuorumError('invalid_request', '`include_transcript` must be `true` or `false`.', { param: 'include_transcript' });
}

/** GET /v1/receipts/{request_id}: scoped to the caller's organisation; another one's id is simply not found. */
export function receipt(deps: RouteDeps) {
  return async (ctx: Context): Promise<void> => {
    const { db, serialiser } = deps;
    const auth = authOf(ctx);
    const requestId = String((ctx.params as Record<string, string | undefined>).request_id ?? '').trim();
    if (!requestId) throw missingRequestId();
    const transcript = includeTranscript(ctx);
    const found = await getReceipt(db, auth.orgId, requestId);
    if (found?.available) {
      ctx.body = serialiser.receipt(found.outcome, transcript);
    } else if (found) {
      ctx.body = serialiser.noReceipt(requestId, found.reason, found.status);
    } else if (await isEstimate(db, auth.orgId, requestId)) {
      ctx.body = serialiser.noReceipt(requestId, ESTIMATE_REASON, 'estimate');
    } else {
      throw new QuorumError('receipt_not_found', `No receipt \`${requestId}\` under this organisation.`, { param: 'request_id' });
    }
  };
}

export function missingRequestId(): QuorumError {
  return new QuorumError('missing_request_id', 'Put the request id in the path: /v1/receipts/{request_id}.', { param: 'request_id' });
}
