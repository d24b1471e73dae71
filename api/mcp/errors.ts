import { ERROR_TABLE, type QuorumError } from '../../domain/errors';
import { errorBody } from '../errors';
import type { JsonObject } from '../forms/shared';

/**
 * The three shapes a failed MCP tool answers with (spec 02, "MCP tool error shapes"), always in a result with
 * `isError: true` whose text is the JSON. Which shape a tool uses is fixed by who answers it (`ToolKind`).
 */
export type ToolKind = 'forwarded' | 'self_answered';

/** Shape 1: the REST error object as the API sends it, with `http_status` beside it; `svc` only when it names a request. */
function forwardedShape(err: QuorumError): JsonObject {
  const body = errorBody(err, err.requestId);
  return { ...body, http_status: ERROR_TABLE[err.code].status } as JsonObject;
}

/** Shape 2: `error.code` and `error.message` with `http_status`; detail (a `retry_after_seconds`, a request id) in `svc`. */
function selfAnsweredShape(err: QuorumError): JsonObject {
  const svc: JsonObject = {};
  if (err.retryAfter !== undefined) svc.retry_after_seconds = err.retryAfter;
  if (err.requestId !== undefined) svc.request_id = err.requestId;
  if (err.param !== null) svc.param = err.param;
  return { error: { code: err.code, message: err.message }, http_status: ERROR_TABLE[err.code].status, svc };
}

/** Shape 3: a tool that failed before it could answer. The detail says what to do, never what broke inside. */
export function failedShape(): JsonObject {
  return {
    error: 'internal_error',
    detail: 'The tool failed before it could answer; retry. Calls that spend money are idempotent on retry.',
  };
}

export function toolErrorShape(kind: ToolKind, err: QuorumError): JsonObject {
  return kind === 'forwarded' ? forwardedShape(err) : selfAnsweredShape(err);
}
