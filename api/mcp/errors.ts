import { ERROR_TABLE, type QuorumError } from '../../domain/errors';
import { VALIDATION_CODES, type Refusal } from '../../domain/mode-validation-codes';
import { errorBody } from '../http/errors';
import type { JsonObject } from '../forms/json';

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

/**
 * One validation refusal as `validate_mode` lists it and `mode_invalid` carries it in `svc.refusals`: the code in
 * `body.error` (spec 02), with the field's path as `param`, and `tiers` / `suggested_ticker` where the code has them.
 */
export function refusalEntry(r: Refusal): JsonObject {
  const { code, message, path, ...extra } = r;
  return { http_status: VALIDATION_CODES[code].status, body: { error: { code, message, param: path || null, ...extra } } };
}

/** Shape 2: `error.code` and `error.message` with `http_status`; detail (refusals, a `retry_after_seconds`) in `svc`. */
function selfAnsweredShape(err: QuorumError): JsonObject {
  const { refusals, ...detail } = (err.detail ?? {}) as { refusals?: Refusal[] };
  const svc: JsonObject = { ...(detail as JsonObject) };
  if (refusals) svc.refusals = refusals.map(refusalEntry);
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
