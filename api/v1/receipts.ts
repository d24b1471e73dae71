import type { Context } from 'koa';
import { authOf } from '../http/gate';
import { readReceipt } from '../../operations/receipt';
import type { RouteDeps } from '../http/context';

/** GET /v1/receipts/{request_id}: the receipt operation, in this Form's shape. */
export function receipt(deps: RouteDeps) {
  return async (ctx: Context): Promise<void> => {
    const { serialiser } = deps;
    const requestId = String((ctx.params as Record<string, string | undefined>).request_id ?? '');
    const view = await readReceipt(deps, authOf(ctx), { requestId, includeTranscript: ctx.query.include_transcript });
    ctx.body = view.available
      ? serialiser.receipt(view.outcome, view.includeTranscript)
      : serialiser.noReceipt(view.requestId, view.reason, view.status);
  };
}
