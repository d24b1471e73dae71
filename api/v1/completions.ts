import type { Context } from 'koa';
import { readJsonObject } from '../http/body';
import { authOf } from '../http/gate';
import { createCompletion } from '../../operations/completion';
import { parseIdempotencyKey, parseRequest } from '../../operations/requests/common';
import { checkParameters } from '../../operations/requests/openai-params';
import type { RouteDeps } from '../http/context';

/** POST /v1/chat/completions, behind the gate: body (400) → the completion operation → this Form's shape. */
export function completions(deps: RouteDeps) {
  return async (ctx: Context): Promise<void> => {
    const { serialiser } = deps;
    const raw = await readJsonObject(ctx);
    checkParameters(raw, serialiser.requests.completionKeys);
    const body = parseRequest(serialiser.requests.completion, raw, { model: serialiser.requests.completionMissingModel });
    const { outcome, replayed } = await createCompletion(deps, authOf(ctx), {
      body,
      idempotencyKey: parseIdempotencyKey(ctx.headers['idempotency-key']),
      // A chat completion has no stream and no later read of its steps: its workflow stores none (issue 42).
      stepEvents: false,
    });
    ctx.body = serialiser.completion(outcome, replayed);
  };
}
