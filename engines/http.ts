import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { request, type Dispatcher } from 'undici';
import type { z } from 'zod';
import { EngineError, kindForStatus, providerMessage, retryAfterMs, type EngineErrorKind } from './errors';

/** What every POST to a provider takes: where, what, until when, and how its failures are told. */
export interface PostOptions {
  url: string;
  headers: Record<string, string>;
  body: unknown;
  /** Our own deadline; its expiry is a retryable `timeout`. */
  deadline: AbortSignal;
  /** The caller's cancellation; its firing is a permanent `aborted`. */
  signal?: AbortSignal;
  engineId: string;
  /** Values to scrub from any message (the credential in use). */
  secrets: readonly string[];
  /** A provider's own reading of an error body, where the status alone misleads. */
  classify?: (status: number, bodyText: string) => EngineErrorKind | undefined;
}

export interface PostJsonOptions<T> extends PostOptions {
  /** The expected success body; anything else is a permanent `malformed` error. */
  schema: z.ZodType<T>;
}

export interface PostStreamOptions<T> extends PostOptions {
  /** One event's data, as JSON; anything else is a permanent `malformed` error. */
  schema: z.ZodType<T>;
  /** Each event's checked data, in order as the provider sent it; what it throws ends the call. */
  onEvent: (data: T) => void;
  /** An event data that is not JSON and marks the reply complete (OpenAI's `[DONE]`); later events are not read. */
  doneData?: string;
  /** Whether the events so far make a whole reply: a stream that ends before is a retryable `connection` failure. */
  complete: () => boolean;
}

type Failure = (
  kind: EngineErrorKind,
  message: string,
  extra?: { status?: number; retryAfterMs?: number; reason?: string; said?: string },
) => EngineError;

/** Failures of one call: named by its engine, scrubbed of its credential. */
function failure(opts: PostOptions): Failure {
  return (kind, message, extra = {}) =>
    new EngineError(kind, `${opts.engineId}: ${message}`, { ...extra, engineId: opts.engineId, secrets: opts.secrets });
}

/** A failure of the connection while sending or reading: the caller's cancellation, our deadline, or the socket. */
function transportFailure(opts: PostOptions, err: unknown, streaming = false): EngineError {
  const fail = failure(opts);
  if (opts.signal?.aborted) return fail('aborted', 'request cancelled by the caller');
  if (opts.deadline.aborted) return fail('timeout', 'no answer before the deadline');
  const code = socketCode(err);
  if (streaming) return streamCut(fail, `: ${describeNetworkError(err)}`, code);
  return fail('connection', `connection failed: ${describeNetworkError(err)}`, {
    reason: code ? `provider unreachable (${code})` : undefined,
  });
}

/** A stream that stopped before the reply was whole: retryable, and told apart from a provider never reached. */
function streamCut(fail: Failure, detail = '', code?: string): EngineError {
  return fail('connection', `stream ended before the reply was complete${detail}`, {
    reason: `provider's stream cut off${code ? ` (${code})` : ''}`,
  });
}

/**
 * The POST sent, shared by the API-key adapters. Sent with undici's `request` (the library under Node's own `fetch`,
 * on the same keep-alive pool), not `fetch`: without WHATWG streams and `Response` objects a call costs about a
 * quarter of the CPU (issue 42, docs/performance.md), and a panel makes nine. A 2xx reply comes back with its body
 * unread; any other is read whole and thrown, classified. The body is read under the request's signal, so a provider
 * that stalls mid-body still times out.
 */
async function send(opts: PostOptions, accept: string): Promise<Dispatcher.ResponseData> {
  let res: Dispatcher.ResponseData;
  let bodyText: string;
  try {
    res = await request(opts.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept, ...opts.headers },
      body: JSON.stringify(opts.body),
      signal: opts.signal ? AbortSignal.any([opts.deadline, opts.signal]) : opts.deadline,
    });
    if (res.statusCode >= 200 && res.statusCode < 300) return res;
    bodyText = await res.body.text();
  } catch (err) {
    throw transportFailure(opts, err);
  }
  const { statusCode: status, headers } = res;
  const said = providerMessage(bodyText);
  throw failure(opts)(
    opts.classify?.(status, bodyText) ?? kindForStatus(status),
    `provider answered ${status}: ${said || '(empty body)'}`,
    {
      status,
      retryAfterMs: retryAfterMs((name) => headerValue(headers[name.toLowerCase()]), bodyText),
      said,
    },
  );
}

/** One JSON POST to a provider: every failure leaves as a classified `EngineError`, every success as a schema-checked body. */
export async function postJson<T>(opts: PostJsonOptions<T>): Promise<T> {
  const fail = failure(opts);
  const res = await send(opts, 'application/json');
  const status = res.statusCode;
  let bodyText: string;
  try {
    bodyText = await res.body.text();
  } catch (err) {
    throw transportFailure(opts, err);
  }
  let json: unknown;
  try {
    json = JSON.parse(bodyText);
  } catch {
    throw fail('malformed', `provider answered ${status} with a body that is not JSON`, { status });
  }
  return checked(opts.schema, json, (where) =>
    fail('malformed', `provider answered ${status} with an unexpected body (${where})`, { status }),
  );
}

/**
 * One POST whose reply is streamed as server-sent events (the provider writes the answer as it goes): failures as
 * `postJson`'s, each event's data schema-checked and handed to `onEvent` as it arrives. The body is read to its end
 * (the connection goes back to the pool), and a stream broken or ended before `complete()` is a retryable
 * `connection` failure: the events already handed on stay valid, the rest never came.
 */
export async function postStream<T>(opts: PostStreamOptions<T>): Promise<void> {
  const fail = failure(opts);
  const res = await send(opts, 'text/event-stream');
  const type = headerValue(res.headers['content-type']) ?? '';
  if (!type.toLowerCase().includes('text/event-stream')) {
    await res.body.dump().catch(() => undefined);
    throw fail('malformed', `provider answered ${res.statusCode} with ${type || 'no content type'}, not an event stream`, {
      status: res.statusCode,
    });
  }
  let done = false;
  const events: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => events.push(event) });
  const decoder = new TextDecoder();
  const deliver = (): void => {
    for (const event of events.splice(0)) {
      if (done) return;
      if (opts.doneData !== undefined && event.data === opts.doneData) done = true;
      else opts.onEvent(eventData(opts.schema, event, fail));
    }
  };
  const chunks = (res.body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  try {
    for (;;) {
      let next: IteratorResult<Buffer>;
      try {
        next = await chunks.next();
      } catch (err) {
        if (done || opts.complete()) return;
        throw transportFailure(opts, err, true);
      }
      if (next.done) break;
      parser.feed(decoder.decode(next.value, { stream: true }));
      deliver();
    }
  } finally {
    // Unfinished only when an event failed: the rest of the reply is not wanted.
    await chunks.return?.();
  }
  if (!done && !opts.complete()) throw streamCut(fail);
}

/** One event's data, JSON and schema-checked. */
function eventData<T>(schema: z.ZodType<T>, event: EventSourceMessage, fail: Failure): T {
  let json: unknown;
  try {
    json = JSON.parse(event.data);
  } catch {
    throw fail('malformed', `provider streamed an event${event.event ? ` "${event.event}"` : ''} whose data is not JSON`);
  }
  return checked(schema, json, (where) => fail('malformed', `provider streamed an unexpected event (${where})`));
}

function checked<T>(schema: z.ZodType<T>, json: unknown, fail: (where: string) => EngineError): T {
  const parsed = schema.safeParse(json);
  if (parsed.success) return parsed.data;
  throw fail(
    parsed.error.issues
      .slice(0, 3)
      .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
      .join('; '),
  );
}

/** A response header as one value (undici gives a repeated one as an array). */
function headerValue(value: string | string[] | undefined): string | null {
  if (value === undefined) return null;
  return Array.isArray(value) ? value.join(', ') : value;
}

/** The socket error's code (ECONNRESET, ECONNREFUSED, undici's UND_ERR_…), on it or its cause: a caller may read it, not its address. */
function socketCode(err: unknown): string | undefined {
  for (let e: unknown = err; e instanceof Error; e = e.cause) if ('code' in e && typeof e.code === 'string') return e.code;
  return undefined;
}

/** The socket error in full, address and all, for the log. */
function describeNetworkError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const message = err.cause instanceof Error ? `${err.message}: ${err.cause.message}` : err.message;
  const code = socketCode(err);
  return code && !message.includes(code) ? `${code} (${message})` : message;
}

export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}${path}`;
}
