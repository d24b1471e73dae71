import { request } from 'undici';
import type { z } from 'zod';
import { EngineError, kindForStatus, providerMessage, retryAfterMs, type EngineErrorKind } from './errors';

export interface PostJsonOptions<T> {
  url: string;
  headers: Record<string, string>;
  body: unknown;
  /** The expected success body; anything else is a permanent `malformed` error. */
  schema: z.ZodType<T>;
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

/**
 * One JSON POST to a provider, shared by the API-key adapters: every failure leaves as a classified `EngineError`,
 * every success as a schema-checked body. Sent with undici's `request` (the library under Node's own `fetch`, on the
 * same keep-alive pool), not `fetch`: without WHATWG streams and `Response` objects a call costs about a quarter of the CPU
 * (issue 42, docs/performance.md), and a panel makes nine.
 */
export async function postJson<T>(opts: PostJsonOptions<T>): Promise<T> {
  const signal = opts.signal ? AbortSignal.any([opts.deadline, opts.signal]) : opts.deadline;
  const fail = (
    kind: EngineErrorKind,
    message: string,
    extra: { status?: number; retryAfterMs?: number; reason?: string; said?: string } = {},
  ): EngineError => new EngineError(kind, `${opts.engineId}: ${message}`, { ...extra, engineId: opts.engineId, secrets: opts.secrets });

  let status: number;
  let bodyText: string;
  let header: (name: string) => string | null;
  try {
    const res = await request(opts.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', ...opts.headers },
      body: JSON.stringify(opts.body),
      signal,
    });
    status = res.statusCode;
    header = (name) => headerValue(res.headers[name.toLowerCase()]);
    // The body is read under the same signal, so a provider that stalls mid-body still times out.
    bodyText = await res.body.text();
  } catch (err) {
    if (opts.signal?.aborted) throw fail('aborted', 'request cancelled by the caller');
    if (opts.deadline.aborted) throw fail('timeout', 'no answer before the deadline');
    const code = socketCode(err);
    throw fail('connection', `connection failed: ${describeNetworkError(err)}`, {
      reason: code ? `provider unreachable (${code})` : undefined,
    });
  }

  if (status < 200 || status >= 300) {
    const said = providerMessage(bodyText);
    throw fail(opts.classify?.(status, bodyText) ?? kindForStatus(status), `provider answered ${status}: ${said || '(empty body)'}`, {
      status,
      retryAfterMs: retryAfterMs(header, bodyText),
      said,
    });
  }
  let json: unknown;
  try {
    json = JSON.parse(bodyText);
  } catch {
    throw fail('malformed', `provider answered ${status} with a body that is not JSON`, { status });
  }
  const parsed = opts.schema.safeParse(json);
  if (!parsed.success) {
    const where = parsed.error.issues
      .slice(0, 3)
      .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
      .join('; ');
    throw fail('malformed', `provider answered ${status} with an unexpected body (${where})`, { status });
  }
  return parsed.data;
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
