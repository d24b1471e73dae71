import type { Context } from 'koa';
import { readJsonObject } from '../http/body';
import { streamEventJson } from '../forms/response-events';
import { authOf } from '../http/gate';
import { inputItemsJson, responseJson } from '../forms/responses';
import { cancelResponse, createResponse, deleteResponse, listInputItems, retrieveResponse } from '../../operations/responses';
import { parseIdempotencyKey } from '../../operations/requests/common';
import { parseInputItemsQuery, parseResponseRequest, parseRetrieveQuery } from '../../operations/requests/responses';
import { openResponseStream, type Send } from '../../operations/response-stream';
import type { Outcome } from '../../domain/outcome';
import type { RouteDeps } from '../http/context';

/** The `{response_id}` of a route. */
function responseId(ctx: Context): string {
  return String((ctx.params as Record<string, string | undefined>).response_id ?? '');
}

/** A comment line now and then keeps a quiet stream (a long seat) from being cut by a proxy's idle timeout. */
const KEEPALIVE_MS = 15_000;

/**
 * Answers with the response's server-sent events (issue 40 item 2); a refusal (404, 400) was answered before, as
 * JSON. The events stop when the caller hangs up; a background deliberation runs on (resume with `starting_after`),
 * any other is cancelled (operations/responses.ts).
 */
async function sendEvents(ctx: Context, deps: RouteDeps, id: string, startingAfter: number | null, held?: Promise<Outcome>): Promise<void> {
  const run = await openResponseStream(deps, authOf(ctx), id, startingAfter, held);
  const stop = new AbortController();
  const { res } = ctx;
  res.on('close', () => stop.abort());
  // Written here, not piped by Koa: a caller that hangs up mid-stream is how a stream ends, not an error to log.
  ctx.status = 200;
  ctx.respond = false;
  res.writeHead(200, { ...ctx.response.headers, 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  const write = async (text: string): Promise<void> => {
    if (!stop.signal.aborted && !res.write(text))
      await new Promise((resolve) => {
        res.once('drain', resolve);
        res.once('close', resolve);
      });
  };
  let quiet = setInterval(() => void write(': keep-alive\n\n'), KEEPALIVE_MS);
  const send: Send = async (frame) => {
    const { type, data } = streamEventJson(frame, deps.serialiser);
    await write(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
    clearInterval(quiet);
    quiet = setInterval(() => void write(': keep-alive\n\n'), KEEPALIVE_MS);
  };
  void run(send, stop.signal)
    .catch((err: unknown) => deps.log.error('response stream failed', { responseId: id, err }))
    .finally(() => {
      clearInterval(quiet);
      res.end();
    });
}

/** Aborts when the caller's connection closes before its answer was written in full. */
function hangUpOf(ctx: Context): AbortSignal {
  const hungUp = new AbortController();
  ctx.res.once('close', () => {
    if (!ctx.res.writableFinished) hungUp.abort();
  });
  return hungUp.signal;
}

/** POST /v1/responses (issue 40 item 1): the body (400) → the response operation → OpenAI's response object. */
export function createResponseRoute(deps: RouteDeps) {
  return async (ctx: Context): Promise<void> => {
    const { serialiser } = deps;
    const request = parseResponseRequest(serialiser.form, serialiser.requests, await readJsonObject(ctx));
    const idempotencyKey = parseIdempotencyKey(ctx.headers['idempotency-key']);
    const { view, held } = await createResponse(deps, authOf(ctx), { request, idempotencyKey, hangUp: hangUpOf(ctx) });
    if (request.stream) return sendEvents(ctx, deps, view.id, null, held);
    ctx.body = responseJson(view, serialiser);
  };
}

/** GET /v1/responses/{id}: a poll, or with `stream=true` its events (after `starting_after`). */
export function retrieveResponseRoute(deps: RouteDeps) {
  return async (ctx: Context): Promise<void> => {
    const { stream, startingAfter } = parseRetrieveQuery(ctx.query);
    if (stream) return sendEvents(ctx, deps, responseId(ctx), startingAfter);
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

/** GET /v1/responses/{id}/input_items: the conversation the response answered, OpenAI's list of message items. */
export function inputItemsRoute(deps: RouteDeps) {
  return async (ctx: Context): Promise<void> => {
    const page = parseInputItemsQuery(ctx.query);
    ctx.body = inputItemsJson(await listInputItems(deps, authOf(ctx), responseId(ctx), page));
  };
}
