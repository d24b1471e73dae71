import { VALIDATION_CODES, type ValidationCode } from './mode-validation-codes';

/**
 * The one table of error codes (spec 01 "Errors", spec 02 "Run and batch codes", its mode-builder codes and its
 * validation codes).
 * Every error response is built from an entry here; nothing else picks a status or type.
 */
export type ErrorType = 'invalid_request_error' | 'authentication_error' | 'permission_error' | 'rate_limit_error' | 'api_error';

export interface ErrorSpec {
  status: number;
  type: ErrorType;
  /** 5xx and 429 are retryable; 409 `request_in_progress` is "wait", reported as retryable. */
  retryable: boolean;
}

const e = (status: number, type: ErrorType, retryable = false): ErrorSpec => ({ status, type, retryable });

/** A refused release answers with the check's own code (spec 02 "Validation codes"): every validation code is an error code. */
const VALIDATION_ERRORS = Object.fromEntries(
  Object.entries(VALIDATION_CODES).map(([code, spec]) => [code, e(spec.status, 'invalid_request_error')]),
) as { [K in ValidationCode]: ErrorSpec };

export const ERROR_TABLE = {
  ...VALIDATION_ERRORS,
  // 401
  invalid_api_key: e(401, 'authentication_error'),
  revoked_api_key: e(401, 'authentication_error'),
  invalid_oauth_token: e(401, 'authentication_error'),
  // 403
  org_suspended: e(403, 'permission_error'),
  browser_origin_not_allowed: e(403, 'permission_error'),
  insufficient_scope: e(403, 'permission_error'),
  tier_not_permitted: e(403, 'permission_error'),
  mode_not_permitted: e(403, 'permission_error'),
  mode_not_published: e(403, 'permission_error'),
  lab_not_available: e(403, 'permission_error'),
  mode_not_owned: e(403, 'permission_error'),
  // 400
  invalid_request: e(400, 'invalid_request_error'),
  invalid_model: e(400, 'invalid_request_error'),
  invalid_messages: e(400, 'invalid_request_error'),
  invalid_tier: e(400, 'invalid_request_error'),
  invalid_max_cost_usd: e(400, 'invalid_request_error'),
  stream_not_supported: e(400, 'invalid_request_error'),
  missing_request_id: e(400, 'invalid_request_error'),
  missing_batch_id: e(400, 'invalid_request_error'),
  // 400, spec 02 run requests
  invalid_buckets: e(400, 'invalid_request_error'),
  invalid_bucket: e(400, 'invalid_request_error'),
  invalid_bucket_count: e(400, 'invalid_request_error'),
  invalid_judges: e(400, 'invalid_request_error'),
  invalid_questions: e(400, 'invalid_request_error'),
  invalid_difficulty: e(400, 'invalid_request_error'),
  invalid_question_count: e(400, 'invalid_request_error'),
  too_many_questions: e(400, 'invalid_request_error'),
  invalid_tiers: e(400, 'invalid_request_error'),
  invalid_punch_up: e(400, 'invalid_request_error'),
  price_unavailable: e(400, 'invalid_request_error'),
  launch_refused: e(400, 'invalid_request_error'),
  listing_required: e(400, 'invalid_request_error'),
  // Additive (issue 28 item 6): a run's `svc.callback_url` that production will not send to (SSRF).
  callback_url_refused: e(400, 'invalid_request_error'),
  // Additive (issue 40 item 4): an OpenAI parameter Quorum does not honour, and a key OpenAI's request does not have
  // either; `param` names it. Either refuses the call before anything runs.
  unsupported_parameter: e(400, 'invalid_request_error'),
  unknown_parameter: e(400, 'invalid_request_error'),
  // 404 / 405
  model_not_found: e(404, 'invalid_request_error'),
  receipt_not_found: e(404, 'invalid_request_error'),
  batch_not_found: e(404, 'invalid_request_error'),
  not_found: e(404, 'invalid_request_error'),
  // Additive (issue 40): no response of that id under the organisation (or its stored answer was deleted).
  response_not_found: e(404, 'invalid_request_error'),
  method_not_allowed: e(405, 'invalid_request_error'),
  // 409 / 413 / 422
  request_in_progress: e(409, 'invalid_request_error', true),
  provider_unavailable: e(409, 'invalid_request_error', true),
  reconciliation_required: e(409, 'invalid_request_error'),
  context_length_exceeded: e(413, 'invalid_request_error'),
  request_too_large: e(413, 'invalid_request_error'),
  batch_too_large: e(413, 'invalid_request_error'),
  // spec 02 MCP server codes of connected apps: sign-in (the token store) and the plan's usage check unreachable.
  oauth_unavailable: e(503, 'api_error', true),
  gate_check_failed: e(503, 'api_error', true),
  idempotency_key_reused: e(422, 'invalid_request_error'),
  // 402
  verification_required: e(402, 'invalid_request_error'),
  insufficient_balance: e(402, 'invalid_request_error'),
  quota_exceeded: e(402, 'invalid_request_error'),
  no_billing_configured: e(402, 'invalid_request_error'),
  plan_limit_reached: e(402, 'invalid_request_error'),
  // Additive (issue 38 item 11): a ceiling below the call's quote past the organisation's daily cap credit; nothing runs.
  cap_credit_limit_reached: e(402, 'invalid_request_error'),
  // Additive (issue 41 item 3): the call's hold would take its key past the key's monthly budget; nothing runs.
  key_budget_exceeded: e(402, 'invalid_request_error'),
  // 429
  rate_limit_exceeded: e(429, 'rate_limit_error', true),
  concurrency_limit_exceeded: e(429, 'rate_limit_error', true),
  too_many_concurrent_requests: e(429, 'rate_limit_error', true),
  test_launch_limit_exceeded: e(429, 'rate_limit_error', true),
  certify_launch_limit_exceeded: e(429, 'rate_limit_error', true),
  // 5xx
  classification_failed: e(502, 'api_error', true),
  upstream_provider_error: e(502, 'api_error', true),
  mode_resolution_mismatch: e(502, 'api_error', true),
  cost_unreadable: e(502, 'api_error', true),
  service_unavailable: e(503, 'api_error', true),
  mode_unavailable: e(503, 'api_error', true),
  // Additive (issue 40 item 4): the answer did not meet the caller's `response_format`; nothing billed.
  response_format_failed: e(502, 'api_error', true),
  internal_error: e(500, 'api_error', true),
  // spec 02 MCP server codes of the mode builder (save_mode, list_mode); the validation codes come in above.
  mode_not_found: e(404, 'invalid_request_error'),
  draft_required: e(400, 'invalid_request_error'),
  forbidden: e(403, 'permission_error'),
  test_key_not_allowed: e(403, 'permission_error'),
  mode_not_allowed: e(403, 'permission_error'),
  name_taken: e(409, 'invalid_request_error'),
  org_owner_missing: e(409, 'invalid_request_error'),
  draft_pending: e(409, 'invalid_request_error'),
  draft_changed: e(409, 'invalid_request_error', true),
  no_draft: e(409, 'invalid_request_error'),
  draft_unvalidated: e(409, 'invalid_request_error'),
  mode_not_released: e(409, 'invalid_request_error'),
  listing_rejected: e(409, 'invalid_request_error'),
  listing_delisted: e(409, 'invalid_request_error'),
  listing_changed: e(409, 'invalid_request_error', true),
  published_version_uncertified: e(409, 'invalid_request_error'),
  conflict: e(409, 'invalid_request_error'),
  mode_invalid: e(422, 'invalid_request_error'),
  pricing_unavailable: e(503, 'api_error', true),
  validation_unavailable: e(503, 'api_error', true),
  save_unavailable: e(503, 'api_error', true),
  listing_read_failed: e(503, 'api_error', true),
  // spec 02 MCP server codes of the advisor (ask_advisor, approve_quote, advisor_propose_mode)
  suffix_not_supported: e(400, 'invalid_request_error'),
  invalid_batch_id: e(400, 'invalid_request_error'),
  invalid_quote_id: e(400, 'invalid_request_error'),
  payer_mismatch: e(403, 'permission_error'),
  quote_not_found: e(404, 'invalid_request_error'),
  quote_already_used: e(409, 'invalid_request_error'),
  requoted: e(409, 'invalid_request_error'),
  quote_expired: e(410, 'invalid_request_error'),
  too_few_engines: e(422, 'invalid_request_error'),
  advisor_unavailable: e(502, 'api_error', true),
  no_proposal: e(502, 'api_error', true),
  launch_failed: e(502, 'api_error', true),
  chat_history_required: e(503, 'api_error'),
  status_unavailable: e(503, 'api_error', true),
  engines_unavailable: e(503, 'api_error', true),
  approval_not_recorded: e(503, 'api_error', true),
  quote_read_failed: e(503, 'api_error', true),
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERROR_TABLE;

/** A failure the edge turns into the spec's error body; thrown anywhere below it. */
export class QuorumError extends Error {
  readonly code: ErrorCode;
  readonly param: string | null;
  /** Seconds for `Retry-After` (every 429 carries one). */
  readonly retryAfter?: number;
  /** The request this error belongs to, when one exists (`svc.request_id`). */
  readonly requestId?: string;
  /** Detail the spec puts in `svc` beside the code (a `mode_invalid`'s refusals, a validation code's `tiers`). */
  readonly detail?: Readonly<Record<string, unknown>>;

  constructor(
    code: ErrorCode,
    message: string,
    opts: { param?: string | null; retryAfter?: number; requestId?: string; detail?: Record<string, unknown> } = {},
  ) {
    super(message);
    this.name = 'QuorumError';
    this.code = code;
    this.param = opts.param ?? null;
    this.retryAfter = opts.retryAfter;
    this.requestId = opts.requestId;
    this.detail = opts.detail;
  }

  static isCode(code: string): code is ErrorCode {
    return Object.hasOwn(ERROR_TABLE, code);
  }

  get spec(): ErrorSpec {
    return ERROR_TABLE[this.code];
  }
}
