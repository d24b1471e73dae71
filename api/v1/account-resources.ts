import { z } from 'zod';
import { CALL_STATUSES, LEDGER_KINDS, LIST_PAGE } from '../../operations/call-list';
import { USAGE_DIMENSIONS } from '../../operations/usage';
import type { JsonObject } from '../forms/json';

/**
 * The account's reads (issue 41 items 1 and 2, beyond the spec) for the OpenAPI document: `GET /v1/usage`,
 * `/v1/balance`, `/v1/receipts` and `/v1/ledger`. The tests parse replies with these.
 */

const usd = z.number().describe('USD, exact to the micro-dollar.');
const unixSeconds = z.number().int().describe('Unix seconds.');

export const UsageResultSchema = z.object({
  object: z.literal('usage.result'),
  mode: z.string().nullable().describe('Form A: the mode key; Form B: its ticker. Null unless grouped by `mode`.'),
  api_key_id: z.string().nullable().describe('The key the calls were made with. Null unless grouped by `key`.'),
  tier: z.string().nullable(),
  lane: z.enum(['express', 'panel']).nullable(),
  user: z.string().nullable().describe('The calls’ OpenAI `user`. Null unless grouped by `user` (or when the calls sent none).'),
  metadata: z
    .record(z.string(), z.string().nullable())
    .nullable()
    .describe('Each `metadata.<key>` grouped by, with the calls’ value (null: they had none). Null unless grouped by one.'),
  calls: z.number().int(),
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  engine_cost_usd: usd.describe('The engines on the service’s keys, of the calls charged to the balance.'),
  platform_fee_usd: usd,
  mode_fee_usd: usd,
  cap_credit_usd: usd.describe('The `cap_credit` ledger entries of the calls.'),
  billed_usd: usd.describe('The calls’ `charge` ledger entries less their `cap_credit`: what the balance paid.'),
});

export const UsagePageSchema = z.object({
  object: z.literal('page'),
  data: z.array(
    z.object({
      object: z.literal('bucket'),
      start_time: unixSeconds,
      end_time: unixSeconds,
      results: z.array(UsageResultSchema).describe('One per group that had calls in the bucket; empty when none did.'),
    }),
  ),
  has_more: z.boolean(),
  next_page: z.string().nullable().describe('Pass as `page` (same window and `bucket_width`) for the next buckets.'),
});

export const BalanceSchema = z.object({
  object: z.literal('balance'),
  balance_usd: usd.describe('The prepaid balance: the sum of the ledger.'),
  held_usd: usd.describe('Held for calls in flight.'),
  available_usd: usd.describe('What a new call may hold: the balance less what is held.'),
  trial: z.object({
    credit_usd: usd.describe('The trial credit granted.'),
    unused_usd: usd.describe('Of it, what is not spent yet (spending comes out of it first); 0 once the trial has ended.'),
    started_at: unixSeconds,
    expires_at: unixSeconds.describe('When the unused credit is deducted.'),
    expired_at: unixSeconds.nullable().describe('When it was (null while the trial lasts).'),
  }),
});

export const LedgerEntrySchema = z.object({
  object: z.literal('ledger.entry'),
  id: z.string(),
  kind: z.enum(LEDGER_KINDS),
  amount_usd: usd.describe('Its effect on the balance.'),
  held_delta_usd: usd.describe('Its effect on what is held.'),
  request_id: z.string().nullable().describe('The call (`req_…`) or run (a batch id) it belongs to.'),
  note: z.string().nullable(),
  created_at: unixSeconds,
});

const list = <T extends z.ZodType>(entry: T, order: string): z.ZodObject =>
  z.object({
    object: z.literal('list'),
    data: z.array(entry).describe(order),
    first_id: z.string().nullable(),
    last_id: z.string().nullable().describe('Pass as `after` for the next page.'),
    has_more: z.boolean(),
  });

export const LedgerListSchema = list(LedgerEntrySchema, 'Newest first.');

export const ReceiptListEntrySchema = z
  .looseObject({
    object: z.literal('receipt'),
    request_id: z.string(),
    status: z.enum(CALL_STATUSES as [string, ...string[]]),
    ok: z.literal(true),
    receipt_available: z.boolean(),
  })
  .describe('What `GET /v1/receipts/{request_id}` answers for the call, without transcripts, after its id and status.');

export const ReceiptListSchema = list(ReceiptListEntrySchema, 'Newest first (by when the call began).');

const query = (name: string, schema: JsonObject, description?: string, required = false): JsonObject => ({
  name,
  in: 'query',
  required,
  schema,
  ...(description && { description }),
});
const time = (name: string, what: string, required = false): JsonObject =>
  query(name, { type: 'integer', minimum: 0, maximum: 253_402_300_799 }, `${what}, in Unix seconds.`, required);
const FORMAT = query(
  'format',
  { type: 'string', enum: ['json', 'jsonl', 'csv'], default: 'json' },
  '`jsonl` or `csv`: every entry the filters admit (from `after` on), not a page.',
);
const pageParams = (afterSchema: JsonObject): JsonObject[] => [
  query('limit', { type: 'integer', minimum: 1, maximum: LIST_PAGE.max, default: LIST_PAGE.default }),
  query('after', afterSchema, 'The `last_id` of the page before; 404 when it names none of this organisation’s.'),
  time('start_time', 'From (inclusive)'),
  time('end_time', 'Until (exclusive)'),
  FORMAT,
];

export const USAGE_PARAMETERS: JsonObject[] = [
  time('start_time', 'The window’s start (inclusive)', true),
  time('end_time', 'The window’s end (exclusive; default now)'),
  query('bucket_width', { type: 'string', enum: ['1d', '1h'], default: '1d' }, 'UTC days or hours.'),
  query(
    'group_by',
    { type: 'array', items: { type: 'string', pattern: `^(${USAGE_DIMENSIONS.join('|')}|metadata\\..{1,64})$` } },
    'Any of these, comma-separated or repeated, or as `group_by[]` (OpenAI’s SDKs); `metadata.<key>` groups by that key of the calls’ `metadata`.',
  ),
  query(
    'api_key_ids',
    { type: 'array', maxItems: 100, items: { type: 'string', minLength: 1, maxLength: 200 } },
    'Only calls made with these keys (`key_…`), comma-separated, repeated or as `api_key_ids[]`; an id of no key of the organisation matches nothing.',
  ),
  query(
    'models',
    { type: 'array', maxItems: 100, items: { type: 'string', minLength: 1, maxLength: 200 } },
    'Only calls of these modes as the results name them (Form A the mode key, Form B the ticker), comma-separated, repeated or as `models[]`; any other matches nothing.',
  ),
  query('limit', { type: 'integer', minimum: 1, maximum: 168 }, 'Buckets per page: 1d default 7, at most 31; 1h default 24, at most 168.'),
  query('page', { type: 'string', pattern: '^[0-9]{1,12}$' }, 'The `next_page` of the page before.'),
];

export const RECEIPT_LIST_PARAMETERS: JsonObject[] = [
  ...pageParams({ type: 'string', minLength: 1, maxLength: 200 }),
  query('mode', { type: 'string', minLength: 1, maxLength: 200 }, 'A mode key or ticker.'),
  query('key', { type: 'string', minLength: 1, maxLength: 200 }, 'The id of the key the calls were made with.'),
  query('status', { type: 'string', enum: [...CALL_STATUSES] }),
  query('lane', { type: 'string', enum: ['express', 'panel'] }),
  {
    name: 'metadata',
    in: 'query',
    required: false,
    style: 'deepObject',
    explode: true,
    schema: { type: 'object', additionalProperties: { type: 'string', minLength: 1, maxLength: 512 } },
    description: '`metadata[<key>]=<value>`, as many as wanted: calls whose `metadata` has every pair.',
  },
];

export const LEDGER_PARAMETERS: JsonObject[] = [
  ...pageParams({ type: 'string', pattern: '^[0-9]{1,18}$' }),
  query(
    'kind',
    { type: 'array', items: { type: 'string', enum: [...LEDGER_KINDS] } },
    'Only these kinds (comma-separated or repeated); docs/money.md says what each means.',
  ),
];
