import type { Context } from 'koa';
import { readJsonObject } from '../http/body';
import { authOf } from '../http/gate';
import { responseJson } from '../forms/responses';
import { cancelResponse, createResponse, deleteResponse, retrieveResponse } from '../../operations/responses';
import { parseIdempotencyKey } from '../../operations/requests/common';
import { parseResponseRequest } from '../../operations/requests/responses';
import type { RouteDeps } from '../http/context';

/** The `{response_id}` of a route. */
function responseId(ctx: Context): string {
  return String((ctx.params as Record<string, string | undefined>).response_id ?? '');
}

/** POST /v1/responses (issue 40 item 1): the body (400) → the response operation → OpenAI's response object. */
export function createResponseRoute(deps: RouteDeps) {
  return async (ctx: Context): Promise<void> => {
    const { serialiser } = deps;
    const request = parseResponseRequest(serialiser.form, serialiser.requests, await readJsonObject(ctx));
    const view = await createResponse(deps, authOf(ctx), { request, idempotencyKey: parseIdempotencyKey(ctx.headers['idempotency-key']) });
    ctx.body = responseJson(view, serialiser);
  };
}

/** GET /v1/responses/{id}: a poll. */
export function retrieveResponseRoute(deps: RouteDeps) {
  return async (ctx: Context): Promise<void> => {
    ctx.body = responseJson(await retrieveResponse(deps, authOf(ctx), responseId(ctx)), deps.serialiser);
  };
}

/** POST /v1/responses/{id}/cancel (issue 40 item 3). */
export function cancelResponseRoute(deps: RouteDeps) {
  return async (ctx: Context): Promise<void> => {
    ctx.body = responseJson(await cancelResponse(deps, authOf(ctx), responseId(ctx)), deps.serialiser);
  };
}

/** DELETE /v1/responses/{id}: the stored answer removed, as OpenAI answers it. */
export function deleteResponseRoute(deps: RouteDeps) {
  return async (ctx: Context): Promise<void> => {
    const { id } = await deleteResponse(deps, authOf(ctx), responseId(ctx));
    ctx.body = { id, object: 'response', deleted: true };
  };
}
