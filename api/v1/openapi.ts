import { z } from 'zod';
import { ACCOUNT_EVENT_TYPES, type AccountEventType } from '../../domain/account-events';
import { ERROR_TABLE } from '../../domain/errors';
import { DECIDED_BY, SYNTHESIS_FATES } from '../../domain/aggregation';
import type { FormSerialiser } from '../forms';
import { ModeSpecDocSchema } from '../../domain/mode-spec';
import { IdempotencyKeySchema } from '../../operations/requests/common';
import { responseRequestDoc } from '../../operations/requests/responses';
import { CHAT_UNHONOURED } from '../../operations/requests/openai-params';
import type { JsonObject } from '../forms/json';
import { RUN_LIST_PARAMETERS, RunListSchema } from './run-list-resources';
import {
  AccountEventListSchema,
  ACTIVITY_PARAMETERS,
  ActivityListSchema,
  AlertsChangeSchema,
  OrganizationAlertsSchema,
  OrganizationRetentionSchema,
  RetentionChangeSchema,
  BudgetSchema,
  KEY_ID_PARAMETER,
  KeyCreateSchema,
  NewOrganizationKeySchema,
  OrganizationKeyListSchema,
  OrganizationKeySchema,
  OrganizationKeyWithSpendSchema,
} from './organization-resources';
import {
  BalanceSchema,
  LEDGER_PARAMETERS,
  LedgerEntrySchema,
  LedgerListSchema,
  RECEIPT_LIST_PARAMETERS,
  ReceiptListEntrySchema,
  ReceiptListSchema,
  USAGE_PARAMETERS,
  UsagePageSchema,
} from './account-resources';
import {
  AttemptSchema,
  CertifiedScopeSchema,
  CertifyPollSchema,
  CertifyRequestSchema,
  LaunchSchema,
  RUN_QUESTION_PARAMETERS,
  RunEndedEventSchema,
  RunQuestionSchema,
  TestPollSchema,
  testRunRequestSchema,
} from './run-resources';

/** The error body every failure uses (spec 01 "Error body"); documented from the same table that builds it. */
const ErrorBodySchema = z.object({
  error: z.object({
    message: z.string(),
    type: z.enum(['invalid_request_error', 'authentication_error', 'permission_error', 'rate_limit_error', 'api_error']),
    code: z.enum(Object.keys(ERROR_TABLE) as [string, ...string[]]),
    param: z.string().nullable(),
  }),
  svc: z.object({ request_id: z.string().nullable() }).optional(),
});

/** `svc.certification` of a `/v1/models` entry and of `list_modes` (null when the configuration called has none). */
const ModeCertificationSchema = z
  .object({
    verdict: z
      .enum(['certified', 'provisional', 'not_certified'])
      .describe('For `tier` only. The listed attempt: the latest that certified, else the latest with a verdict.'),
    ...CertifiedScopeSchema,
    lower_bound: z.number().nullable().describe("The plain 95% interval's lower bound of the win rate."),
    interval: z.object({ low: z.number(), high: z.number() }).nullable().describe('The plain 95% interval.'),
    attempt: z.number().int().describe('Which attempt on the configuration the listed one was, from 1.'),
    alpha: z.number().describe('α_k = 0.02·6/(π²k²) of that attempt.'),
    adjusted_lower_bound: z.number().nullable().describe('Its one-sided lower bound at `alpha`: certified when above 0.50.'),
    batch_id: z.string().describe('The certification run (`GET /v1/certify?batch_id=`).'),
    completed_at: z.string().describe('ISO 8601.'),
    mode_version: z.number().int(),
    mode_config_hash: z.string(),
    simulated: z.boolean().describe("A test key's run on `sim` engines: it certifies nothing, and only its own organisation is shown it."),
    attempts: z.array(AttemptSchema).describe('Every attempt on this configuration, in launch order, with its verdict.'),
    rule: z.string().describe('How attempts turn into the listed verdict.'),
  })
  .nullable();

/** An answer as the seats gave it; null unless the texts are shown (`include_transcript`) and were not deleted. */
const ShownAnswer = z.string().nullable().describe('The answer read (`42`, `paris`, `B`, `yes`); null where the texts are not shown.');

/**
 * `svc.aggregation` of a completion (and response) and `aggregation` of a receipt (issue 52, beyond the spec): how the
 * answer was made on a mode that declares `aggregation`; null when the call recorded none.
 */
const AggregationSchema = z
  .object({
    method: z
      .enum(['synthesis', 'select', 'vote'])
      .describe('The mode’s: a vote over the seats’ answers, a seat selected, or a synthesis.'),
    answer_kind: z
      .enum(['choice', 'yes_no', 'number', 'short_text', 'math'])
      .nullable()
      .describe('How the seats’ answers were read (`svc.answer_kind`, or a run question’s); null: only `Final answer:` lines.'),
    ballots: z
      .array(
        z.object({
          seat: z.string().describe('The seat’s role, as on its rows (`seat1`…).'),
          answer: ShownAnswer.describe('Its answer; null when it gave none readable, or the texts are not shown.'),
          read_by: z.enum(['text', 'ballot']).nullable().describe('From its own text, or by the ballot call; null: unreadable.'),
        }),
      )
      .describe('One per seat that answered the last round, in seat order.'),
    votes: z.array(z.object({ answer: ShownAnswer, votes: z.number().int() })).describe('Each answer given and its votes, most first.'),
    winner: z.object({ seat: z.string(), answer: ShownAnswer }).describe('The seat whose text is returned, and its answer.'),
    decided_by: z.enum(DECIDED_BY),
    seats_asked: z.number().int().describe('Seats asked in round 1.'),
    early_stop: z.boolean().describe('A first wave agreed and the rest of the seats were never asked (nor billed).'),
    ballot_call: z
      .object({
        model_used: z.string(),
        latency_ms: z.number().int(),
        tokens_in: z.number().int(),
        tokens_out: z.number().int(),
        real_cost_usd: z.number(),
      })
      .nullable()
      .describe('The short structured call that read answers no seat stated plainly, in the call’s tokens and bill; null when none ran.'),
    synthesis: z
      .enum(SYNTHESIS_FATES)
      .describe('`none`: no synthesis ran; `kept`: a pinned one kept the answer; else why the seat’s text stands.'),
    answer_line_added: z.boolean().describe('The ballot read the answer, and `Final answer: …` was added after the returned text.'),
  })
  .nullable();

/** JSON Schema (draft 2020-12, which OpenAPI 3.1 uses natively) of what a request schema accepts. */
function schemaOf(schema: z.ZodType): JsonObject {
  const doc = { ...(z.toJSONSchema(schema, { io: 'input' }) as JsonObject) };
  // The document itself declares the dialect.
  delete doc.$schema;
  return doc;
}

const json = (schema: JsonObject): JsonObject => ({ 'application/json': { schema } });
/** OpenAI's conventions on every `/v1` response (issue 40 item 7, beyond the spec): the key's request rate, the request's id. */
const HEADERS: JsonObject = {
  'x-request-id': { description: 'The request’s id: `svc.request_id` where the body names one.', schema: { type: 'string' } },
  'x-ratelimit-limit-requests': { description: 'The key’s requests per minute.', schema: { type: 'integer' } },
  'x-ratelimit-remaining-requests': { description: 'Requests the key has left in the last minute’s window.', schema: { type: 'integer' } },
  'x-ratelimit-reset-requests': {
    description: 'Until the window holds none of the key’s requests again, as OpenAI writes it (`20ms`, `59.5s`, `1m0s`).',
    schema: { type: 'string' },
  },
};
const ok = (description: string): JsonObject => ({ description, headers: HEADERS, content: json({ type: 'object' }) });
const okOf = (description: string, ref: string): JsonObject => ({
  description,
  headers: HEADERS,
  content: json({ $ref: `#/components/schemas/${ref}` }),
});
const batchId = { name: 'batch_id', in: 'query', required: true, schema: { type: 'string', format: 'uuid' } };
/** A run's poll, or with `format=jsonl` its questions one a line. */
const pollOk = (description: string, ref: string): JsonObject => ({
  description,
  headers: HEADERS,
  content: {
    ...json({ $ref: `#/components/schemas/${ref}` }),
    'application/x-ndjson': { schema: { $ref: '#/components/schemas/RunQuestion' } },
  },
});
const pathBatchId = { name: 'batch_id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } };
const CANCELLED =
  'The poll’s answer once the run stopped: `cancelled`, unjudged questions credited back (`refunded_usd`); a run that had already ended, unchanged.';
/** The failure statuses an operation may answer (spec 01 per endpoint, plus 413 for an oversized body), each in the error shape. */
const errors = (...statuses: number[]): JsonObject =>
  Object.fromEntries(
    statuses.map((s) => [
      String(s),
      { description: 'An error in the spec shape.', headers: HEADERS, content: json({ $ref: '#/components/schemas/ErrorBody' }) },
    ]),
  );
/** Every endpoint can refuse the caller (401, 403), limit it (429) and fail on the service side (500, 503). */
const ALWAYS = [401, 403, 429, 500, 503];

const idempotencyKeyHeader = { name: 'Idempotency-Key', in: 'header', required: false, schema: schemaOf(IdempotencyKeySchema) };
const body = (schema: z.ZodType): JsonObject => ({ required: true, content: json(schemaOf(schema)) });

/** The named schemas the operations refer to. */
function components(): JsonObject {
  return {
    securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
    schemas: {
      ErrorBody: schemaOf(ErrorBodySchema),
      RunAccepted: schemaOf(LaunchSchema),
      TestRunPoll: schemaOf(TestPollSchema),
      CertificationPoll: schemaOf(CertifyPollSchema),
      RunList: schemaOf(RunListSchema),
      RunQuestion: schemaOf(RunQuestionSchema),
      ModeCertification: schemaOf(ModeCertificationSchema),
      Aggregation: schemaOf(AggregationSchema),
      OrganizationKey: schemaOf(OrganizationKeySchema),
      NewOrganizationKey: schemaOf(NewOrganizationKeySchema),
      OrganizationKeyWithSpend: schemaOf(OrganizationKeyWithSpendSchema),
      OrganizationKeyList: schemaOf(OrganizationKeyListSchema),
      ActivityList: schemaOf(ActivityListSchema),
      OrganizationAlerts: schemaOf(OrganizationAlertsSchema),
      OrganizationRetention: schemaOf(OrganizationRetentionSchema),
      AccountEventList: schemaOf(AccountEventListSchema),
      // What the mode builder saves (MCP `validate_mode`, `save_mode`; `quorum mode template` prints a complete one).
      ModeSpec: schemaOf(ModeSpecDocSchema),
      UsagePage: schemaOf(UsagePageSchema),
      Balance: schemaOf(BalanceSchema),
      ReceiptList: schemaOf(ReceiptListSchema),
      ReceiptListEntry: schemaOf(ReceiptListEntrySchema),
      LedgerList: schemaOf(LedgerListSchema),
      LedgerEntry: schemaOf(LedgerEntrySchema),
    },
  };
}

/**
 * Issues 40 item 4 and 53 item 2, beyond the spec: what a completion does with each of OpenAI's chat completion
 * parameters, from the table the check reads (operations/requests/openai-params.ts).
 */
const COMPLETION_PARAMETERS = [
  'OpenAI parameters are honoured, accepted where they ask for nothing, or refused, never dropped (docs/api-extensions.md).',
  'Honoured: those in the body schema (`response_format`, `max_tokens`, `max_completion_tokens`, `temperature`, `top_p`,',
  '`seed`, `stop`, `user`, `safety_identifier` (read as `user`), `metadata`).',
  `Refused with 400 \`unsupported_parameter\` naming it in \`error.param\`, unless at a value that asks for nothing: ${Object.entries(
    CHAT_UNHONOURED,
  )
    .map(([k, { noop }]) => `\`${k}\`${noop ? ` (accepted at ${noop.values})` : ''}`)
    .join(', ')}.`,
  'Any other key: 400 `unknown_parameter`. `stream: true` is 400 `stream_not_supported` (`POST /v1/responses` streams).',
  '`null` is absent. An answer that does not meet `response_format` ends 502 `response_format_failed`, nothing billed.',
  '`svc.answer_kind` (beyond the spec): how a mode that votes reads the seats’ answers; another value is 400 `invalid_request`',
  'with `error.param` `svc.answer_kind`.',
].join(' ');

/** The calls: a completion, an estimate, the modes and a receipt. */
function callPaths(serialiser: FormSerialiser): JsonObject {
  return {
    '/v1/chat/completions': {
      post: {
        operationId: 'createChatCompletion',
        description: COMPLETION_PARAMETERS,
        parameters: [idempotencyKeyHeader],
        requestBody: body(serialiser.requests.completion),
        responses: {
          '200': ok(
            'A chat completion with the `svc` block; `svc.late_seats` (beyond the spec) when a mode’s quorum cut seats; `svc.aggregation` (beyond the spec), an `Aggregation`: how the answer was made, null when the mode declares none.',
          ),
          ...errors(...ALWAYS, 400, 402, 404, 409, 413, 422, 502),
          '409': {
            ...(errors(409)['409'] as JsonObject),
            headers: {
              'Retry-After': {
                description:
                  '`request_in_progress`: seconds the running call has left, from its stage and the mode’s typical stage times (1–60).',
                schema: { type: 'integer', minimum: 1, maximum: 60 },
              },
            },
          },
        },
      },
    },
    '/v1/estimate': {
      post: {
        operationId: 'createEstimate',
        requestBody: body(serialiser.requests.estimate),
        responses: { '200': ok('A free quote; `billed_usd` is 0.'), ...errors(...ALWAYS, 400, 404, 413, 502) },
      },
    },
    '/v1/models': {
      get: {
        operationId: 'listModels',
        responses: {
          '200': ok(
            '`{object: list, data}` of callable modes: each entry OpenAI’s `Model` (`id`, `object: model`, `created` in Unix seconds: when the mode was first saved, `owned_by: quorum`) with `svc`; each `svc.certification` is a `ModeCertification`.',
          ),
          ...errors(...ALWAYS),
        },
      },
    },
    // Issue 40 item 7, beyond the spec: OpenAI's `models.retrieve`.
    '/v1/models/{id}': {
      get: {
        operationId: 'retrieveModel',
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string', minLength: 1 } }],
        responses: {
          '200': ok('The `/v1/models` entry of a mode this key may call.'),
          ...errors(...ALWAYS, 404),
        },
      },
    },
    '/v1/receipts/{request_id}': {
      get: {
        operationId: 'getReceipt',
        parameters: [
          { name: 'request_id', in: 'path', required: true, schema: { type: 'string', minLength: 1 } },
          { name: 'include_transcript', in: 'query', required: false, schema: { type: 'boolean', default: false } },
        ],
        responses: {
          '200': ok(
            '`{ok, receipt_available, reason?, receipt?}`; the call’s `user` and `metadata` in `receipt` (or beside `reason`) when sent; a seat a mode’s quorum cut has `late` on its row and is in `late_seats`; a receipt whose texts were deleted has `transcript_deleted` (`at`, `reason`, `note`); `aggregation` is an `Aggregation` (null when the mode declares none), its answers null unless `include_transcript`.',
          ),
          ...errors(...ALWAYS, 400, 404),
        },
      },
    },
  };
}

const pathResponseId = { name: 'response_id', in: 'path', required: true, schema: { type: 'string', pattern: '^resp_[A-Za-z0-9_-]+$' } };
const RESPONSE =
  'OpenAI’s response object (`object: response`, `status` queued / in_progress / completed / incomplete / failed / cancelled, `output` with the answer as `output_text`, `usage`, `error`, `incomplete_details`) with this Form’s chat-completion `svc`.';

/** Issue 40 item 2: a response's server-sent events, with `stream: true` or `?stream=true`. */
const EVENTS =
  'With `stream`: `text/event-stream`, OpenAI’s events each with a `sequence_number` from 0: `response.created`, `response.in_progress`, one more `response.in_progress` per deliberation step with the step in `quorum` (`step`: classified, grounded, seat_answered, judged, critique_round, synthesising, aggregated; `recorded_at`; a seat’s or judge’s `ended_at`), then `response.output_item.added`, `response.content_part.added`, the answer in `response.output_text.delta`s (the express seat’s or the synthesis’s as its engine writes it, after the step it follows; a chosen seat’s whole once chosen), `response.output_text.done`, `response.content_part.done`, `response.output_item.done` and `response.completed` (a failed call: `error` then `response.failed`; `response.incomplete` when cut by its output limit or cancelled). Resume with `GET /v1/responses/{id}?stream=true&starting_after=N`.';
const okOrEvents = (description: string): JsonObject => {
  const plain = ok(description);
  return {
    ...plain,
    description: `${description} ${EVENTS}`,
    content: { ...(plain.content as JsonObject), 'text/event-stream': { schema: { type: 'string' } } },
  };
};
const streamQuery = [
  { name: 'stream', in: 'query', required: false, schema: { type: 'boolean' }, description: 'Answer with the response’s events.' },
  {
    name: 'starting_after',
    in: 'query',
    required: false,
    schema: { type: 'integer', minimum: 0 },
    description: 'With `stream=true`: only the events after this `sequence_number` (a dropped stream resumes).',
  },
];

/** Issue 40 items 1 and 3, beyond the spec (docs/api-extensions.md): OpenAI’s Responses API over the deliberation. */
function responsePaths(serialiser: FormSerialiser): JsonObject {
  return {
    '/v1/responses': {
      post: {
        operationId: 'createResponse',
        parameters: [idempotencyKeyHeader],
        requestBody: body(responseRequestDoc(serialiser.form)),
        responses: {
          '200': okOrEvents(`${RESPONSE} With \`background\`, answered at once.`),
          ...errors(...ALWAYS, 400, 402, 404, 409, 413, 422, 502),
        },
      },
    },
    '/v1/responses/{response_id}': {
      get: {
        operationId: 'getResponse',
        parameters: [pathResponseId, ...streamQuery],
        responses: { '200': okOrEvents(RESPONSE), ...errors(...ALWAYS, 400, 404) },
      },
      delete: {
        operationId: 'deleteResponse',
        parameters: [pathResponseId],
        responses: {
          '200': ok('`{id, object: response, deleted: true}`: the answer’s texts removed; the receipt keeps its figures.'),
          ...errors(...ALWAYS, 404, 409),
        },
      },
    },
    '/v1/responses/{response_id}/cancel': {
      post: {
        operationId: 'cancelResponse',
        parameters: [pathResponseId],
        responses: {
          '200': ok(`${RESPONSE} \`cancelled\` once stopped (what ran billed, the rest of the hold released); an ended one unchanged.`),
          ...errors(...ALWAYS, 404),
        },
      },
    },
    '/v1/responses/{response_id}/input_items': {
      get: {
        operationId: 'listResponseInputItems',
        parameters: [
          pathResponseId,
          {
            name: 'order',
            in: 'query',
            required: false,
            schema: { type: 'string', enum: ['asc', 'desc'] },
            description: 'Default `desc`: newest first.',
          },
          {
            name: 'limit',
            in: 'query',
            required: false,
            schema: { type: 'integer', minimum: 1, maximum: 100 },
            description: 'Default 20.',
          },
          { name: 'after', in: 'query', required: false, schema: { type: 'string' }, description: 'An item `id`: the page after it.' },
        ],
        responses: {
          '200': ok(
            '`{object: list, data, first_id, last_id, has_more}`: the conversation the response answered (a continued one’s earlier turns first), each a `message` item (`input_text`; an earlier answer `output_text`); empty once its texts were deleted.',
          ),
          ...errors(...ALWAYS, 400, 404),
        },
      },
    },
  };
}

/** What the organisation's webhook URL receives (issue 41 item 4, docs/retention.md). */
const AccountEventSchema = z.object({
  id: z.string().describe('`evt_…`: the same on every attempt of a delivery, and in `Quorum-Event-Id`.'),
  object: z.literal('event'),
  type: z.enum(Object.keys(ACCOUNT_EVENT_TYPES) as [AccountEventType, ...AccountEventType[]]),
  created: z.number().int().describe('Unix seconds: when the event was raised.'),
  organization: z.string(),
  data: z
    .record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()]))
    .describe('`balance.low`: `balance_usd`, `threshold_usd`; `trial.expiring`: `expires_at`, `days_before` (7 or 1), `trial_credit_usd`.'),
});

/** Issue 41 item 5, beyond the spec (docs/retention.md): a call's transcript deleted; the organisation exported. */
function retentionPaths(): JsonObject {
  return {
    '/v1/receipts/{request_id}/transcript': {
      delete: {
        operationId: 'deleteTranscript',
        parameters: [{ name: 'request_id', in: 'path', required: true, schema: { type: 'string', minLength: 1 } }],
        responses: {
          '200': ok(
            '`{request_id, object: transcript, deleted: true}`: the call’s texts blanked and its workflow history deleted; its figures kept.',
          ),
          ...errors(...ALWAYS, 404, 409),
        },
      },
    },
    '/v1/organization/export': {
      get: {
        operationId: 'exportOrganization',
        responses: {
          '200': {
            description: 'Every row the organisation owns, one JSON object a line named by its `object`; no secret. The owner’s key only.',
            headers: HEADERS,
            content: { 'application/jsonl': { schema: { type: 'string' } } },
          },
          ...errors(...ALWAYS),
        },
      },
    },
  };
}

/** Test runs and certifications: launch, poll, list, cancel (DESIGN §10). */
function runPaths(serialiser: FormSerialiser): JsonObject {
  const formB = serialiser.form === 'B';
  const launchParameters = formB ? [idempotencyKeyHeader] : [];
  const launchErrors = errors(...ALWAYS, 400, 404, 413, ...(formB ? [402, 409, 422] : []));
  return {
    '/v1/tests': {
      post: {
        operationId: 'launchTestRun',
        parameters: launchParameters,
        requestBody: body(testRunRequestSchema(serialiser.form)),
        responses: { '200': okOf('Launched (charged up front), or priced when `dry_run`.', 'RunAccepted'), ...launchErrors },
      },
      get: {
        operationId: 'getTestRun',
        parameters: [batchId, ...RUN_QUESTION_PARAMETERS],
        responses: { '200': pollOk('Progress, and results once the run has ended.', 'TestRunPoll'), ...errors(...ALWAYS, 400, 404) },
      },
    },
    '/v1/certify': {
      post: {
        operationId: 'launchCertification',
        parameters: launchParameters,
        requestBody: body(CertifyRequestSchema),
        responses: { '200': okOf('150 questions, three judges, two repeats; $50 flat.', 'RunAccepted'), ...launchErrors },
      },
      get: {
        operationId: 'getCertification',
        parameters: [batchId, ...RUN_QUESTION_PARAMETERS],
        responses: {
          '200': pollOk('Progress, and the verdict once the run has ended.', 'CertificationPoll'),
          ...errors(...ALWAYS, 400, 404),
        },
      },
    },
    // Issue 28 items 1 and 2, beyond the spec (docs/api-extensions.md).
    '/v1/runs': {
      get: {
        operationId: 'listRuns',
        parameters: RUN_LIST_PARAMETERS,
        responses: {
          '200': okOf('The organisation’s runs, newest first, each as its poll shows it.', 'RunList'),
          ...errors(...ALWAYS, 400),
        },
      },
    },
    '/v1/tests/{batch_id}/cancel': {
      post: {
        operationId: 'cancelTestRun',
        parameters: [pathBatchId],
        responses: { '200': okOf(CANCELLED, 'TestRunPoll'), ...errors(...ALWAYS, 404) },
      },
    },
    '/v1/certify/{batch_id}/cancel': {
      post: {
        operationId: 'cancelCertification',
        parameters: [pathBatchId],
        responses: { '200': okOf(CANCELLED, 'CertificationPoll'), ...errors(...ALWAYS, 404) },
      },
    },
  };
}

/** Issue 41 items 3 and 6, beyond the spec: the organisation's keys and activity log, for an admin key only (403 else). */
function organizationPaths(): JsonObject {
  const keyErrors = errors(...ALWAYS, 404);
  return {
    '/v1/organization/keys': {
      post: {
        operationId: 'createOrganizationKey',
        requestBody: body(KeyCreateSchema),
        responses: { '200': okOf('The new key, with its secret shown this once.', 'NewOrganizationKey'), ...errors(...ALWAYS, 400) },
      },
      get: {
        operationId: 'listOrganizationKeys',
        responses: { '200': okOf('Every key of the organisation, newest first.', 'OrganizationKeyList'), ...errors(...ALWAYS) },
      },
    },
    '/v1/organization/keys/{key_id}': {
      get: {
        operationId: 'getOrganizationKey',
        parameters: [KEY_ID_PARAMETER],
        responses: { '200': okOf('The key and what its calls spent this month.', 'OrganizationKeyWithSpend'), ...keyErrors },
      },
      post: {
        operationId: 'setOrganizationKeyBudget',
        parameters: [KEY_ID_PARAMETER],
        requestBody: body(BudgetSchema),
        responses: { '200': okOf('The key with its new monthly budget.', 'OrganizationKey'), ...errors(...ALWAYS, 400, 404) },
      },
      delete: {
        operationId: 'revokeOrganizationKey',
        parameters: [KEY_ID_PARAMETER],
        responses: { '200': ok('`{object: "organization.key.deleted", id, deleted: true, revoked_at}`.'), ...keyErrors },
      },
    },
    '/v1/organization/activity': {
      get: {
        operationId: 'listOrganizationActivity',
        parameters: ACTIVITY_PARAMETERS,
        responses: { '200': okOf('The account’s changes, newest first.', 'ActivityList'), ...errors(...ALWAYS, 400) },
      },
    },
    // Issue 53 item 5: the console's Alerts page (alerts and transcript retention) by API.
    '/v1/organization/alerts': {
      get: {
        operationId: 'getOrganizationAlerts',
        responses: {
          '200': okOf('The webhook URL account events go to and the `balance.low` threshold.', 'OrganizationAlerts'),
          ...errors(...ALWAYS),
        },
      },
      post: {
        operationId: 'updateOrganizationAlerts',
        requestBody: body(AlertsChangeSchema),
        responses: {
          '200': okOf('The alerts as saved; a field left out is unchanged.', 'OrganizationAlerts'),
          ...errors(...ALWAYS, 400),
        },
      },
    },
    '/v1/organization/alerts/events': {
      get: {
        operationId: 'listOrganizationAccountEvents',
        responses: { '200': okOf('The latest account events and their delivery.', 'AccountEventList'), ...errors(...ALWAYS) },
      },
    },
    '/v1/organization/retention': {
      get: {
        operationId: 'getOrganizationRetention',
        responses: { '200': okOf('How long transcripts are kept.', 'OrganizationRetention'), ...errors(...ALWAYS) },
      },
      post: {
        operationId: 'updateOrganizationRetention',
        requestBody: body(RetentionChangeSchema),
        responses: { '200': okOf('The retention as saved.', 'OrganizationRetention'), ...errors(...ALWAYS, 400) },
      },
    },
  };
}
const SIGNED_HEADERS = [
  { name: 'Quorum-Event-Id', in: 'header', required: true, schema: { type: 'string' }, description: 'The body’s `id`.' },
  {
    name: 'Quorum-Signature',
    in: 'header',
    required: true,
    schema: { type: 'string' },
    description: '`t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">` under the organisation’s signing secret.',
  },
];
const DELIVERY_ANSWERS: JsonObject = {
  '200': { description: 'Any 2xx ends the delivery; a 4xx but 408 and 429 ends it undelivered; else it is retried.' },
};

/** A list's page, or with `format=jsonl` / `csv` every entry (one a line; a header, then one row each). */
const listOk = (description: string, ref: string, entry: string): JsonObject => ({
  description,
  headers: HEADERS,
  content: {
    ...json({ $ref: `#/components/schemas/${ref}` }),
    'application/x-ndjson': { schema: { $ref: `#/components/schemas/${entry}` } },
    'text/csv': { schema: { type: 'string' } },
  },
});

/** Issue 41 items 1 and 2, beyond the spec (docs/api-extensions.md): the account's reads, with the `receipts` scope. */
function accountPaths(): JsonObject {
  return {
    '/v1/usage': {
      get: {
        operationId: 'getUsage',
        parameters: USAGE_PARAMETERS,
        responses: {
          '200': okOf('The calls per UTC day or hour and group; money from the ledger, exact to the micro-dollar.', 'UsagePage'),
          ...errors(...ALWAYS, 400),
        },
      },
    },
    '/v1/balance': {
      get: {
        operationId: 'getBalance',
        responses: { '200': okOf('The balance, what is held, what is available, and the trial credit.', 'Balance'), ...errors(...ALWAYS) },
      },
    },
    '/v1/receipts': {
      get: {
        operationId: 'listReceipts',
        parameters: RECEIPT_LIST_PARAMETERS,
        responses: {
          '200': listOk(
            'The organisation’s calls, newest first, each as its receipt without transcripts.',
            'ReceiptList',
            'ReceiptListEntry',
          ),
          ...errors(...ALWAYS, 400, 404),
        },
      },
    },
    '/v1/ledger': {
      get: {
        operationId: 'listLedgerEntries',
        parameters: LEDGER_PARAMETERS,
        responses: {
          '200': listOk('The organisation’s ledger entries, newest first.', 'LedgerList', 'LedgerEntry'),
          ...errors(...ALWAYS, 400, 404),
        },
      },
    },
  };
}

/** Issue 28 item 6: what a run POSTs to its `svc.callback_url` when it ends (docs/api-extensions.md). */
function webhooks(): JsonObject {
  return {
    'run.ended': {
      post: {
        operationId: 'runEnded',
        parameters: SIGNED_HEADERS,
        requestBody: { required: true, content: json(schemaOf(RunEndedEventSchema)) },
        responses: DELIVERY_ANSWERS,
      },
    },
    // Issue 41 item 4: account events, to the organisation's webhook URL, signed and retried alike.
    'account.event': {
      post: {
        operationId: 'accountEvent',
        parameters: SIGNED_HEADERS,
        requestBody: { required: true, content: json(schemaOf(AccountEventSchema)) },
        responses: DELIVERY_ANSWERS,
      },
    },
  };
}

/** GET /openapi.json: generated from the zod schemas that validate the requests of this deployment's Form. */
export function openApiDocument(serialiser: FormSerialiser): JsonObject {
  return {
    openapi: '3.1.0',
    info: { title: `Quorum deliberation API (Form ${serialiser.form})`, version: '1.0.0' },
    security: [{ bearer: [] }],
    components: components(),
    paths: {
      ...callPaths(serialiser),
      ...responsePaths(serialiser),
      ...runPaths(serialiser),
      ...accountPaths(),
      ...organizationPaths(),
      ...retentionPaths(),
    },
    webhooks: webhooks(),
  };
}
