import { failureLine } from '../domain/caller-errors';
import { redact } from '../infra/redact';

export type EngineErrorKind =
  'rate_limited' | 'server' | 'timeout' | 'connection' | 'auth' | 'bad_request' | 'unknown_model' | 'malformed' | 'unavailable' | 'aborted';

const RETRYABLE: Readonly<Record<EngineErrorKind, boolean>> = {
  rate_limited: true,
  server: true,
  timeout: true,
  connection: true,
  auth: false,
  bad_request: false,
  unknown_model: false,
  malformed: false,
  unavailable: false,
  // The caller cancelled: retrying would act against its wish.
  aborted: false,
};

/** What a caller may read of a failure of each kind: no address, no key, no provider text. */
function defaultReason(kind: EngineErrorKind, status: number | undefined): string {
  const code = status === undefined ? '' : ` ${status}`;
  switch (kind) {
    case 'rate_limited':
      return 'rate limited by the provider';
    case 'server':
      return `provider error${code}`;
    case 'timeout':
      return 'timed out';
    case 'connection':
      return 'provider unreachable';
    case 'auth':
      return `provider refused the credentials${code}`;
    case 'bad_request':
      return `provider refused the request${code}`;
    case 'unknown_model':
      return 'model unknown to the provider';
    case 'malformed':
      return 'unreadable reply from the provider';
    case 'unavailable':
      return 'not configured here';
    case 'aborted':
      return 'cancelled';
  }
}

/**
 * A classified engine failure. Retryable ones (429, 5xx, timeouts, dropped connections) are for
 * Temporal's retry policy; permanent ones move a seat to its backup engine. The message carries the
 * provider's own words, scrubbed of the credential used and of anything key-shaped: it is for the log.
 * `reason` is what a caller may read (issue 27); `line` is what a receipt records: the reason and, when the provider
 * said something, its words without addresses.
 */
export class EngineError extends Error {
  readonly kind: EngineErrorKind;
  readonly retryable: boolean;
  readonly retryAfterMs?: number;
  readonly status?: number;
  readonly engineId?: string;
  readonly reason: string;
  readonly line: string;

  constructor(
    kind: EngineErrorKind,
    message: string,
    opts: {
      status?: number;
      retryAfterMs?: number;
      engineId?: string;
      secrets?: readonly string[];
      /** The caller-safe reason, when the kind's own would say less (e.g. the socket error's code). */
      reason?: string;
      /** The provider's own error text, for the receipt's line (scrubbed and stripped of addresses there). */
      said?: string;
    } = {},
  ) {
    super(scrub(message, opts.secrets ?? []));
    this.name = 'EngineError';
    this.kind = kind;
    this.retryable = RETRYABLE[kind];
    this.status = opts.status;
    this.retryAfterMs = opts.retryAfterMs;
    this.engineId = opts.engineId;
    this.reason = opts.reason ?? defaultReason(kind, opts.status);
    this.line = failureLine(this.reason, opts.said === undefined ? undefined : scrub(opts.said, opts.secrets ?? []));
  }
}

export function isEngineError(value: unknown): value is EngineError {
  return value instanceof EngineError;
}

/** Own keys are not in the global registry (they come and go per request), so they are removed explicitly. */
export function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) if (secret.length > 0) out = out.split(secret).join('[redacted]');
  return redact(out);
}

export function kindForStatus(status: number): EngineErrorKind {
  if (status === 429) return 'rate_limited';
  if (status === 408) return 'timeout';
  // 529 is Anthropic's "overloaded"; every 5xx is the provider's side.
  if (status >= 500) return 'server';
  if (status === 401 || status === 403) return 'auth';
  if (status === 404) return 'unknown_model';
  return 'bad_request';
}

/**
 * Milliseconds the provider asked us to wait: `retry-after-ms` (OpenAI), `retry-after` in seconds or
 * as an HTTP date, or Google's `RetryInfo.retryDelay` ("37s") in the error body.
 */
export function retryAfterMs(header: (name: string) => string | null | undefined, bodyText = '', now = Date.now()): number | undefined {
  const ms = Number(header('retry-after-ms'));
  if (header('retry-after-ms') && Number.isFinite(ms) && ms >= 0) return Math.ceil(ms);
  const raw = header('retry-after');
  if (raw) {
    const secs = Number(raw);
    if (Number.isFinite(secs) && secs >= 0) return Math.ceil(secs * 1000);
    const at = Date.parse(raw);
    if (Number.isFinite(at)) return Math.max(0, at - now);
  }
  const delay = /"retryDelay"\s*:\s*"(\d+(?:\.\d+)?)s"/.exec(bodyText);
  return delay ? Math.ceil(Number(delay[1]) * 1000) : undefined;
}

const MAX_MESSAGE = 500;

/** The provider's own error message from the usual JSON shapes (`{error:{message}}`, `{message}`), else the raw text. */
export function providerMessage(bodyText: string): string {
  let message: string | undefined;
  try {
    const body: unknown = JSON.parse(bodyText);
    if (body && typeof body === 'object') {
      const error = 'error' in body ? body.error : undefined;
      if (error && typeof error === 'object' && 'message' in error && typeof error.message === 'string') message = error.message;
      else if (typeof error === 'string') message = error;
      else if ('message' in body && typeof body.message === 'string') message = body.message;
    }
  } catch {
    // not JSON: fall through to the raw text
  }
  const text = (message ?? bodyText).trim();
  return text.length > MAX_MESSAGE ? `${text.slice(0, MAX_MESSAGE)}…` : text;
}
