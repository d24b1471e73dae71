import type { Context } from 'koa';
import { authOf } from '../http/gate';
import { readReceipt } from '../../operations/receipt';
import type { RouteDeps } from '../http/context';
import type { JsonObject } from '../forms/json';
import type { CallerFields } from '../../operations/receipt';

/** GET /v1/receipts/{request_id}: the receipt operation, in this Form's shape. */
export function receipt(deps: RouteDeps) {
  return async (ctx: Context): Promise<void> => {
    const { serialiser } = deps;
    const requestId = String((ctx.params as Record<string, string | undefined>).request_id ?? '');
    const view = await readReceipt(deps, authOf(ctx), { requestId, includeTranscript: ctx.query.include_transcript });
    const body = view.available
      ? serialiser.receipt(view.outcome, view.includeTranscript)
      : serialiser.noReceipt(view.requestId, view.reason, view.status);
    ctx.body = withCallerFields(body, view.caller);
  };
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
