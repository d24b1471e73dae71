import type { Context, Next } from 'koa';
import { QuorumError, ERROR_TABLE } from '../../domain/errors';
import type { Logger } from '../../infra/log';

export interface ErrorBody {
  error: { message: string; type: string; code: string; param: string | null };
  svc?: { request_id: string | null; batch_id?: string };
}

export function errorBody(err: QuorumError, requestId?: string | null): ErrorBody {
  const body: ErrorBody = { error: { message: err.message, type: err.spec.type, code: err.code, param: err.param } };
  if (requestId !== undefined) body.svc = { request_id: requestId };
  // A launch whose start could not be confirmed names the batch it may yet be (issue 38 item 11).
  const batchId = err.detail?.batch_id;
  if (body.svc && typeof batchId === 'string') body.svc.batch_id = batchId;
  return body;
}

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE']);
const GRPC_UNAVAILABLE = 14;
const GRPC_DEADLINE_EXCEEDED = 4;

/**
 * Postgres or Temporal could not be reached (or went away mid-query): the request could not be checked or run,
 * which the spec answers 503 `service_unavailable` (retryable), not 500.
 */
export function isDependencyOutage(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const e = err as Error & { code?: unknown; cause?: unknown };
  if (typeof e.code === 'string' && (NETWORK_CODES.has(e.code) || /^08|^57P0[123]$/.test(e.code))) return true;
  if (e.name === 'KnexTimeoutError') return true;
  // node-postgres' client-side timers (knex prefixes the SQL): a query or a connection the server did not answer in time.
  if (/Query read timeout|Connection terminated due to connection timeout|timeout exceeded when trying to connect/.test(e.message))
    return true;
  const grpc = (e.cause as { code?: unknown } | undefined)?.code;
  if (e.name === 'ServiceError' && (grpc === GRPC_UNAVAILABLE || grpc === GRPC_DEADLINE_EXCEEDED)) return true;
  return e.cause !== undefined && e.cause !== err && isDependencyOutage(e.cause);
}

export function asQuorumError(thrown: unknown): QuorumError {
  if (thrown instanceof QuorumError) return thrown;
  if (isDependencyOutage(thrown))
    return new QuorumError('service_unavailable', 'A service dependency is unreachable; retry shortly.', { retryAfter: 2 });
  return new QuorumError('internal_error', 'The service failed; retry with the same Idempotency-Key.');
}

/** Renders any thrown error in the spec's shape; an unexpected one becomes 500 `internal_error` with no internals leaked. */
export function errorMiddleware(log: Logger) {
  return async (ctx: Context, next: Next): Promise<void> => {
    try {
      await next();
    } catch (thrown: unknown) {
      const err = asQuorumError(thrown);
      if (!(thrown instanceof QuorumError)) log.error('request failed', { path: ctx.path, code: err.code, err: thrown });
      ctx.status = ERROR_TABLE[err.code].status;
      if (err.retryAfter !== undefined) ctx.set('Retry-After', String(Math.max(1, Math.ceil(err.retryAfter))));
      // Every /v1 error says which request it belongs to, `null` where none exists (spec 01, Error body).
      const requestId =
        err.requestId ?? (typeof ctx.state.requestId === 'string' ? ctx.state.requestId : ctx.path.startsWith('/v1') ? null : undefined);
      ctx.body = errorBody(err, requestId);
    }
  };
}
