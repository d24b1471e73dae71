import { z } from 'zod';
import { KEY_KINDS, SCOPES, type KeyKind, type Scope } from '../../domain/api-keys';
import { QuorumError } from '../../domain/errors';
import { usdToMicros } from '../../domain/money';
import { DEFAULT_RETENTION_DAYS, MAX_RETENTION_DAYS } from '../../domain/retention';
import { isStorableText } from '../../domain/storable-text';
import { parseRequest } from './common';

/**
 * The bodies of `POST /v1/organization/keys` and `POST /v1/organization/keys/{id}` (issue 41 item 3); the console's
 * key form is turned into the same body and read by the same schema. Amounts are USD here, micro-dollars inside.
 */

function hasMicroPrecision(usd: number): boolean {
  try {
    usdToMicros(usd);
    return true;
  } catch {
    return false;
  }
}

/** A monthly budget: positive USD with at most 6 decimals, at most a million; null clears it. */
const BudgetUsd = z
  .number()
  .positive()
  .max(1_000_000)
  .refine((v) => hasMicroPrecision(v), 'at most 6 decimals')
  .nullable();

const ModeName = z
  .string()
  .min(1)
  .max(200)
  .refine((v) => isStorableText(v), 'not a mode name');

export const KeyCreateSchema = z.object({
  label: z.string().trim().min(1).max(100).optional(),
  kind: z.enum(KEY_KINDS).default('live'),
  scopes: z.array(z.enum(SCOPES)).min(1).optional(),
  /** Unix seconds, as OpenAI's APIs write instants. */
  expires_at: z.number().int().positive().max(32_503_680_000).nullable().optional(),
  modes: z.array(ModeName).min(1).max(100).nullable().optional(),
  monthly_budget_usd: BudgetUsd.optional(),
  requests_per_minute: z.number().int().positive().nullable().optional(),
});

export const BudgetSchema = z.object({ monthly_budget_usd: BudgetUsd });

/** What a new key is given; absent fields take the organisation's defaults (every scope and mode, its limit, no budget). */
export interface NewKey {
  keyKind: KeyKind;
  label?: string;
  scopes?: Scope[];
  expiresAt?: Date;
  allowedModes?: string[];
  monthlyBudgetMicros?: bigint;
  requestsPerMinute?: number;
}

/** A field the body does not have is refused by name, as OpenAI's unknown parameters are. */
function refuseUnknown(body: Record<string, unknown>, shape: Record<string, unknown>): void {
  const unknown = Object.keys(body).find((k) => !Object.hasOwn(shape, k));
  if (unknown !== undefined)
    throw new QuorumError('unknown_parameter', `\`${unknown.slice(0, 60)}\` is not a field of this request.`, { param: unknown });
}

export function parseNewKey(body: Record<string, unknown>): NewKey {
  refuseUnknown(body, KeyCreateSchema.shape);
  const b = parseRequest(KeyCreateSchema, body);
  return {
    keyKind: b.kind,
    ...(b.label !== undefined && { label: b.label }),
    ...(b.scopes && { scopes: [...new Set(b.scopes)] }),
    ...(b.expires_at != null && { expiresAt: new Date(b.expires_at * 1000) }),
    ...(b.modes && { allowedModes: [...new Set(b.modes)] }),
    ...(b.monthly_budget_usd != null && { monthlyBudgetMicros: usdToMicros(b.monthly_budget_usd) }),
    ...(b.requests_per_minute != null && { requestsPerMinute: b.requests_per_minute }),
  };
}

/** The new monthly budget of `POST /v1/organization/keys/{id}` (null: none). */
export function parseKeyBudget(body: Record<string, unknown>): bigint | null {
  refuseUnknown(body, BudgetSchema.shape);
  const { monthly_budget_usd: usd } = parseRequest(BudgetSchema, body);
  return usd === null ? null : usdToMicros(usd);
}

/**
 * The bodies of `POST /v1/organization/alerts` and `POST /v1/organization/retention`: the console's Alerts page's
 * fields over the API. A field left out keeps its value; the operation (`changeAccountSettings`) checks what each
 * value may be (a public http(s) URL, dollars with six decimals, days up to the most) and names the field it refuses.
 */
export const AlertsChangeSchema = z
  .object({
    webhook_url: z
      .string()
      .max(2048)
      .nullable()
      .optional()
      .describe('Where account events are POSTed, signed: an http(s) URL without credentials; null or "" removes it (no delivery).'),
    balance_low_usd: z
      .number()
      .min(0)
      .max(1_000_000)
      .optional()
      .describe(
        '`balance.low` is raised when a charge takes the balance below this (USD, at most 6 decimals); 0: never. A new value re-arms it.',
      ),
  })
  .refine((b) => b.webhook_url !== undefined || b.balance_low_usd !== undefined, {
    message: 'send `webhook_url`, `balance_low_usd` or both',
    path: ['webhook_url'],
  });

export const RetentionChangeSchema = z.object({
  transcript_retention_days: z
    .number()
    .int()
    .min(0)
    .max(MAX_RETENTION_DAYS)
    .nullable()
    .describe(`Days a call's texts are kept after it ended (0: none past the call); null: the default, ${DEFAULT_RETENTION_DAYS}.`),
});

export interface AlertsChange {
  webhookUrl?: string | null;
  lowBalanceUsd?: number;
}

export function parseAlertsChange(body: Record<string, unknown>): AlertsChange {
  refuseUnknown(body, AlertsChangeSchema.shape);
  const b = parseRequest(AlertsChangeSchema, body);
  return {
    ...(b.webhook_url !== undefined && { webhookUrl: b.webhook_url }),
    ...(b.balance_low_usd !== undefined && { lowBalanceUsd: b.balance_low_usd }),
  };
}

/** The new retention in days (null: the default). */
export function parseRetentionChange(body: Record<string, unknown>): number | null {
  refuseUnknown(body, RetentionChangeSchema.shape);
  return parseRequest(RetentionChangeSchema, body, { transcript_retention_days: 'invalid_request' }).transcript_retention_days;
}
