import { z } from 'zod';
import { ACTIVITY_EDGES, ACTIVITY_KINDS } from '../../domain/activity';
import { KEY_KINDS, SCOPES } from '../../domain/api-keys';
import { ACTIVITY_PAGE } from '../../operations/activity';
import { AlertsChangeSchema, BudgetSchema, KeyCreateSchema, RetentionChangeSchema } from '../../operations/requests/organization';
import { ACCOUNT_EVENT_STATES, ACCOUNT_EVENT_TYPES, type AccountEventType } from '../../domain/account-events';
import type { JsonObject } from '../forms/json';

/** `/v1/organization/keys` and `/v1/organization/activity` (issue 41 items 3 and 6) for the OpenAPI document. */

const unix = z.number().int().describe('Unix seconds.');

export const OrganizationKeySchema = z.object({
  object: z.literal('organization.key'),
  id: z.string(),
  label: z.string().nullable(),
  kind: z.enum(KEY_KINDS),
  redacted_value: z.string().describe('The key without its secret: `qrm_live_…abcd`.'),
  scopes: z.array(z.enum(SCOPES)).describe('`[]` for an admin key.'),
  modes: z.array(z.string()).nullable().describe('The modes the key may call; null: every mode of the organisation.'),
  monthly_budget_usd: z.number().nullable(),
  requests_per_minute: z.number().int().nullable().describe("Null: the organisation's (60)."),
  owner: z.boolean().describe("The organisation's first key, issued with it."),
  status: z.enum(['active', 'revoked', 'expired']),
  created_at: unix,
  expires_at: unix.nullable(),
  revoked_at: unix.nullable(),
});

export const NewOrganizationKeySchema = OrganizationKeySchema.extend({
  secret: z.string().describe('The key itself, shown in this response only.'),
});

export const OrganizationKeyWithSpendSchema = OrganizationKeySchema.extend({
  spend: z.object({
    month_start: unix.describe('The first of this calendar month, 00:00 UTC.'),
    spent_usd: z.number().describe('What the key’s calls made this month took from the balance, net of cap credit.'),
    held_usd: z.number().describe('What its calls in flight hold.'),
  }),
});

export const OrganizationKeyListSchema = z.object({
  object: z.literal('list'),
  data: z.array(OrganizationKeySchema).describe('Newest first; every key of the organisation.'),
  first_id: z.string().nullable(),
  last_id: z.string().nullable(),
  has_more: z.literal(false),
});

export const ActivitySchema = z.object({
  object: z.literal('organization.activity'),
  id: z.string().describe('`act_…`; pass the last as `after` for the next page.'),
  kind: z.enum(ACTIVITY_KINDS),
  at: unix,
  actor: z.object({
    type: z.enum(['person', 'key', 'operator']),
    id: z.string().nullable().describe('The person’s or key’s id; null for the operator.'),
    edge: z.enum(ACTIVITY_EDGES),
    ip: z.string().nullable().describe('The client’s address as the edge saw it; null at the CLI.'),
  }),
  subject: z.string().nullable().describe('What the change was about: a key id, a mode, a provider family, an address, a person.'),
  detail: z.record(z.string(), z.unknown()).describe('What changed; never a secret.'),
});

export const ActivityListSchema = z.object({
  object: z.literal('list'),
  data: z.array(ActivitySchema),
  first_id: z.string().nullable(),
  last_id: z.string().nullable(),
  has_more: z.boolean(),
});

/** `/v1/organization/alerts` and `/v1/organization/retention` (issue 53 item 5): the console's Alerts page by API. */
export const OrganizationAlertsSchema = z.object({
  object: z.literal('organization.alerts'),
  webhook_url: z.string().nullable().describe('Where account events are POSTed, signed; null: none (events are recorded, not sent).'),
  balance_low_usd: z.number().describe('`balance.low` below this balance; 0: never.'),
});

export const OrganizationRetentionSchema = z.object({
  object: z.literal('organization.retention'),
  transcript_retention_days: z.number().int().nullable().describe('As set; null: the default.'),
  effective_days: z.number().int().describe('What applies now: the days set, else the default.'),
  default_days: z.number().int(),
  max_days: z.number().int(),
});

export const AccountEventListSchema = z.object({
  object: z.literal('list'),
  data: z
    .array(
      z.object({
        object: z.literal('organization.account_event'),
        id: z.string().describe('`evt_…`, as in the delivery’s `Quorum-Event-Id`.'),
        type: z.enum(Object.keys(ACCOUNT_EVENT_TYPES) as [AccountEventType, ...AccountEventType[]]),
        created_at: unix,
        delivery: z.enum(ACCOUNT_EVENT_STATES),
        attempts: z.number().int(),
        last_status: z.number().int().nullable().describe('The receiver’s last HTTP status.'),
        last_error: z.string().nullable(),
      }),
    )
    .describe('The latest 50 events, newest first, with their delivery.'),
  first_id: z.string().nullable(),
  last_id: z.string().nullable(),
  has_more: z.literal(false),
});

export { AlertsChangeSchema, BudgetSchema, KeyCreateSchema, RetentionChangeSchema };

export const KEY_ID_PARAMETER: JsonObject = { name: 'key_id', in: 'path', required: true, schema: { type: 'string' } };

export const ACTIVITY_PARAMETERS: JsonObject[] = [
  {
    name: 'limit',
    in: 'query',
    required: false,
    schema: { type: 'integer', minimum: 1, maximum: ACTIVITY_PAGE.max, default: ACTIVITY_PAGE.default },
  },
  { name: 'after', in: 'query', required: false, description: 'The `last_id` of the page before.', schema: { type: 'string' } },
  {
    name: 'kind',
    in: 'query',
    required: false,
    description: `Kinds separated by commas: ${ACTIVITY_KINDS.join(', ')}.`,
    schema: { type: 'string' },
  },
  {
    name: 'since',
    in: 'query',
    required: false,
    description: 'From this instant (unix seconds or ISO 8601), inclusive.',
    schema: { type: 'string' },
  },
  {
    name: 'until',
    in: 'query',
    required: false,
    description: 'Before this instant (unix seconds or ISO 8601).',
    schema: { type: 'string' },
  },
];
