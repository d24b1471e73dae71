import type { Context } from 'koa';
import { authOf } from '../http/gate';
import { readReceipt } from '../../operations/receipt';
import type { RouteDeps } from '../http/context';
import { receiptBody } from '../forms/account';

/** GET /v1/receipts/{request_id}: the receipt operation, in this Form's shape. */
export function receipt(deps: RouteDeps) {
  return async (ctx: Context): Promise<void> => {
    const requestId = String((ctx.params as Record<string, string | undefined>).request_id ?? '');
    const view = await readReceipt(deps, authOf(ctx), { requestId, includeTranscript: ctx.query.include_transcript });
    ctx.body = receiptBody(deps.serialiser, view);
  };
}
