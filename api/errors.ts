import type { Context, Next } from 'koa';
import { QuorumError, ERROR_TABLE } from '../domain/errors';
import type { Logger } from '../infra/log';

export interface ErrorBody {
  error: { message: string; type: string; code: string; param: string | null };
  svc?: { request_id: string | null };
}

export function errorBody(err: QuorumError, requestId?: string | null): ErrorBody {
  const body: ErrorBody = { error: { message: err.message, type: err.spec.type, code: err.code, param: err.param } };
  if (requestId !== undefined) body.svc = { request_id: requestId };
  return body;
}

/** Renders any thrown error in the spec's shape; an unexpected one becomes 500 `internal_error` with no internals leaked. */
export function errorMiddleware(log: Logger) {
  return async (ctx: Context, next: Next): Promise<void> => {
    try {
      await next();
    } catch (thrown: unknown) {
      const err = thrown instanceof QuorumError ? thrown : new QuorumError('internal_error', 'The service failed; retry with the same Idempotency-Key.');
      if (!(thrown instanceof QuorumError)) log.error('unhandled error', { path: ctx.path, err: thrown });
      ctx.status = ERROR_TABLE[err.code].status;
      if (err.retryAfter !== undefined) ctx.set('Retry-After', String(Math.max(1, Math.ceil(err.retryAfter))));
      const requestId = err.requestId ?? (typeof ctx.state.requestId === 'string' ? ctx.state.requestId : undefined);
      ctx.body = errorBody(err, requestId);
    }
  };
}
