import type { Knex } from 'knex';
import { z } from 'zod';
import {
  generateApiKey,
  hashApiKey,
  monthStartUtc,
  parseApiKeyKind,
  randomBase62,
  SCOPES,
  type KeyBudgetFigures,
  type KeyKind,
  type Scope,
} from '../../domain/api-keys';
import { QuorumError } from '../../domain/errors';
import { microsToUsd } from '../../domain/money';
import type { AppPrincipal } from '../../domain/plans';
import { raiseAccountEvent } from './account-events';
import { toAdmission, type Admission, type AdmissionRow } from './limits';
import { preparedAs } from '../prepared';
import { unknownOrgAsNotFound, type DbOrTrx } from './shared';

/** Per-key overrides of the spec's limits; null = the service default. */
export interface KeyLimits {
  requestsPerMinute: number | null;
  concurrency: number | null;
  maxInputTokens: number | null;
  maxCostMicros: bigint | null;
}

/** A usable key as `authenticate` reads it (or a connected app's grant, key-shaped); callers.ts makes the principal of it. */
export interface AuthenticatedKey {
  keyId: string;
  orgId: string;
  /** A test key bills nothing and runs every seat on `sim` engines (DESIGN §8). */
  keyKind: KeyKind;
  scopes: Scope[];
  /** null = every mode the organisation is entitled to. */
  allowedModes: string[] | null;
  limits: KeyLimits;
  /** The owner's key (issued with the organisation) may configure bring-your-own provider keys. */
  isOwner: boolean;
  /** Set when a connected app calls with an OAuth access token: the call bills the person's plan (payer `plan`). */
  app?: AppPrincipal;
  /** The key's monthly budget (issue 41): a call that would take its spend this month past it is refused (402). */
  monthlyBudgetMicros?: bigint;
  /**
   * The mode catalogue's revision the key's statement read (migration 033): a mode found at that revision is current
   * for this request (operations/mode-cache.ts). Absent where the caller was not authenticated by an API key.
   */
  catalogueRevision?: bigint;
}

export interface CreateApiKeyInput {
  orgId: string;
  keyKind: KeyKind;
  scopes?: readonly Scope[];
  allowedModes?: readonly string[] | null;
  limits?: Partial<KeyLimits>;
  expiresAt?: Date | null;
  isOwner?: boolean;
  label?: string | null;
  monthlyBudgetMicros?: bigint | null;
}

const positiveInt = z.number().int().positive().nullable().default(null);
const CreateInput = z.object({
  scopes: z
    .array(z.enum(SCOPES))
    .min(1)
    .default([...SCOPES]),
  allowedModes: z.array(z.string().min(1)).min(1).nullable().default(null),
  limits: z
    .object({
      requestsPerMinute: positiveInt,
      concurrency: positiveInt,
      maxInputTokens: positiveInt,
      maxCostMicros: z.bigint().positive().nullable().default(null),
    })
    .default({ requestsPerMinute: null, concurrency: null, maxInputTokens: null, maxCostMicros: null }),
});

/** Issues a key; the raw key is returned once and only its hash is stored. */
export async function createApiKey(db: DbOrTrx, input: CreateApiKeyInput): Promise<{ keyId: string; apiKey: string }> {
  const parsed = CreateInput.safeParse({ scopes: input.scopes, allowedModes: input.allowedModes ?? null, limits: input.limits ?? {} });
  if (!parsed.success)
    throw new QuorumError('invalid_request', parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
  const { allowedModes, limits } = parsed.data;
  // An admin key has no calling scope: the gate lets it reach the organisation's own routes only.
  const scopes = input.keyKind === 'admin' ? [] : parsed.data.scopes;
  const apiKey = generateApiKey(input.keyKind);
  const keyId = `key_${randomBase62(20)}`;
  await unknownOrgAsNotFound(input.orgId, () =>
    db('api_keys').insert({
      id: keyId,
      org_id: input.orgId,
      key_hash: hashApiKey(apiKey),
      prefix: apiKey.slice(0, apiKey.lastIndexOf('_') + 1),
      last4: apiKey.slice(-4),
      mode: input.keyKind,
      scopes: [...new Set(scopes)],
      allowed_modes: allowedModes,
      is_owner: input.isOwner ?? false,
      requests_per_minute: limits.requestsPerMinute,
      concurrency: limits.concurrency,
      max_input_tokens: limits.maxInputTokens,
      max_cost_micros: limits.maxCostMicros?.toString() ?? null,
      expires_at: input.expiresAt ?? null,
      label: input.label ?? null,
      monthly_budget_micros: input.monthlyBudgetMicros?.toString() ?? null,
    }),
  );
  return { keyId, apiKey };
}

interface KeyRow {
  id: string;
  org_id: string;
  /** The key's kind; the column keeps its first name, `mode` (a rename is a migration for one word). */
  mode: KeyKind;
  scopes: Scope[];
  allowed_modes: string[] | null;
  is_owner: boolean;
  requests_per_minute: number | null;
  concurrency: number | null;
  max_input_tokens: number | null;
  max_cost_micros: bigint | null;
  revoked_at: Date | null;
  expires_at: Date | null;
  monthly_budget_micros: string | null;
  org_status: 'active' | 'suspended';
  catalogue_revision: string;
}

/** The key's row with its organisation's status, by the key's hash. */
function keyRowQuery(db: DbOrTrx, rawKey: string): Knex.QueryBuilder {
  return db('api_keys as k')
    .join('organisations as o', 'o.id', 'k.org_id')
    .where('k.key_hash', hashApiKey(rawKey))
    .select(
      'k.id',
      'k.org_id',
      'k.mode',
      'k.scopes',
      'k.allowed_modes',
      'k.is_owner',
      'k.requests_per_minute',
      'k.concurrency',
      'k.max_input_tokens',
      'k.max_cost_micros',
      'k.revoked_at',
      'k.expires_at',
      'k.monthly_budget_micros',
      'o.status as org_status',
      db.raw('(select revision from mode_catalogue) as catalogue_revision'),
    );
}

const malformedKey = (): QuorumError => new QuorumError('invalid_api_key', 'The API key is missing or malformed.');

/** Spec order: unknown key 401 → revoked/expired 401 → suspended organisation 403. Lookup is by hash only. */
export async function authenticate(db: DbOrTrx, rawKey: string): Promise<AuthenticatedKey> {
  if (!parseApiKeyKind(rawKey)) throw malformedKey();
  return authOfRow((await keyRowQuery(db, rawKey).first()) as KeyRow | undefined);
}

/**
 * `authenticate` and the key's requests per minute (`admitRequest`, once) in one statement: the request is counted
 * only when the key is usable and, for `scope`, an API key (not an admin key) with that scope (any, when null) — a
 * refused request is never counted. `admission` is undefined when it was not counted: refused, or by a rule the
 * caller applies itself, which then counts the request as before.
 */
export async function authenticateAdmitting(
  db: DbOrTrx,
  rawKey: string,
  rate: { scope: Scope | null; defaultLimit: number; windowMs: number },
): Promise<{ auth: AuthenticatedKey; admission: Admission | undefined }> {
  if (!parseApiKeyKind(rawKey)) throw malformedKey();
  // admit_request runs only for the row `usable` keeps: lateral on it, so no row, no call.
  const res = await db
    .raw<{ rows: (KeyRow & Partial<AdmissionRow>)[] }>(AUTHENTICATE_ADMITTING, [
      keyRowQuery(db, rawKey),
      rate.scope,
      rate.scope,
      rate.defaultLimit,
      rate.windowMs,
    ])
    .options(preparedAs(AUTHENTICATE_ADMITTING));
  const row = res.rows[0] as (KeyRow & Partial<AdmissionRow>) | undefined;
  const auth = authOfRow(row);
  const counted = row?.allowed !== undefined && row.allowed !== null;
  return { auth, admission: counted ? toAdmission(row as AdmissionRow, rate.windowMs) : undefined };
}

// `k` is `keyRowQuery`, whose text is fixed (the key's hash is a binding), so this statement's text is too.
const AUTHENTICATE_ADMITTING = `
  with k as (?),
       usable as (select * from k
                   where k.revoked_at is null and (k.expires_at is null or k.expires_at > now()) and k.org_status = 'active'
                     and k.mode <> 'admin' and (?::text is null or ?::text = any(k.scopes))),
       a as (select r.* from usable cross join lateral admit_request(usable.id, coalesce(usable.requests_per_minute, ?), ?, 1) r)
  select k.*, a.allowed, a.retry_after_ms, a.remaining, a.reset_ms from k left join a on true`;

function authOfRow(row: KeyRow | undefined): AuthenticatedKey {
  if (!row) throw new QuorumError('invalid_api_key', 'The API key is not recognised.');
  if (row.revoked_at) throw new QuorumError('revoked_api_key', 'The API key has been revoked.');
  if (row.expires_at && row.expires_at.getTime() <= Date.now()) throw new QuorumError('revoked_api_key', 'The API key has expired.');
  if (row.org_status !== 'active') throw new QuorumError('org_suspended', 'The organisation is suspended.');
  return {
    keyId: row.id,
    orgId: row.org_id,
    keyKind: row.mode,
    scopes: row.scopes,
    allowedModes: row.allowed_modes,
    limits: {
      requestsPerMinute: row.requests_per_minute,
      concurrency: row.concurrency,
      maxInputTokens: row.max_input_tokens,
      maxCostMicros: row.max_cost_micros,
    },
    isOwner: row.is_owner,
    ...(row.monthly_budget_micros !== null && { monthlyBudgetMicros: BigInt(row.monthly_budget_micros) }),
    catalogueRevision: BigInt(row.catalogue_revision),
  };
}

/**
 * Revocation is permanent; revoking twice keeps the first time (`now` false). Unknown key, or one of another
 * organisation than `orgId` when given → `not_found`.
 */
export async function revokeApiKey(db: DbOrTrx, keyId: string, orgId?: string): Promise<{ orgId: string; now: boolean }> {
  const q = db('api_keys').where({ id: keyId });
  if (orgId !== undefined) q.where({ org_id: orgId });
  const rows = (await q
    .update({ revoked_at: db.raw('coalesce(revoked_at, now())') })
    // Read before the update: whether this statement is the one that revoked it.
    .returning(['org_id', db.raw('(select k.revoked_at is null from api_keys k where k.id = api_keys.id) as now')])) as {
    org_id: string;
    now: boolean;
  }[];
  if (rows.length === 0) throw new QuorumError('not_found', `no API key ${keyId}`);
  return { orgId: rows[0].org_id, now: rows[0].now };
}

export interface KeyListing {
  id: string;
  keyKind: KeyKind;
  label: string | null;
  /** What the key looks like without its secret: `qrm_live_…abcd`. */
  display: string;
  scopes: Scope[];
  /** null = every mode the organisation is entitled to. */
  allowedModes: string[] | null;
  requestsPerMinute: number | null;
  monthlyBudgetMicros: bigint | null;
  isOwner: boolean;
  expiresAt: Date | null;
  createdAt: Date;
  revokedAt: Date | null;
}

interface ListingRow {
  id: string;
  mode: KeyKind;
  label: string | null;
  prefix: string;
  last4: string;
  scopes: Scope[];
  allowed_modes: string[] | null;
  requests_per_minute: number | null;
  monthly_budget_micros: string | null;
  is_owner: boolean;
  expires_at: Date | null;
  created_at: Date;
  revoked_at: Date | null;
}

const LISTING_COLUMNS = [
  'id',
  'mode',
  'label',
  'prefix',
  'last4',
  'scopes',
  'allowed_modes',
  'requests_per_minute',
  'monthly_budget_micros',
  'is_owner',
  'expires_at',
  'created_at',
  'revoked_at',
];

function toListing(r: ListingRow): KeyListing {
  return {
    id: r.id,
    keyKind: r.mode,
    label: r.label,
    display: `${r.prefix}…${r.last4}`,
    scopes: r.scopes,
    allowedModes: r.allowed_modes,
    requestsPerMinute: r.requests_per_minute,
    monthlyBudgetMicros: r.monthly_budget_micros === null ? null : BigInt(r.monthly_budget_micros),
    isOwner: r.is_owner,
    expiresAt: r.expires_at,
    createdAt: r.created_at,
    revokedAt: r.revoked_at,
  };
}

/** An organisation's keys, newest first; never a secret, only the prefix and last four characters. */
export async function listApiKeys(db: DbOrTrx, orgId: string): Promise<KeyListing[]> {
  const rows = (await db('api_keys')
    .where({ org_id: orgId })
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .select(LISTING_COLUMNS)) as ListingRow[];
  return rows.map(toListing);
}

/** One key of the organisation; another organisation's key is not found. */
export async function findApiKey(db: DbOrTrx, orgId: string, keyId: string): Promise<KeyListing | undefined> {
  const row = (await db('api_keys').where({ org_id: orgId, id: keyId }).first(LISTING_COLUMNS)) as ListingRow | undefined;
  return row && toListing(row);
}

/** Sets (or with null clears) a key's monthly budget. */
export async function setKeyBudget(db: DbOrTrx, keyId: string, budgetMicros: bigint | null): Promise<void> {
  await db('api_keys')
    .where({ id: keyId })
    .update({ monthly_budget_micros: budgetMicros?.toString() ?? null });
}

/** What a key's calls of a month cost so far: billed (net of cap credit) and still held by calls in flight. */
export interface KeySpend {
  spentMicros: bigint;
  heldMicros: bigint;
}

/**
 * The key's calls made in the month starting at `month` (its first instant, UTC), from the running total the ledger
 * keeps (migration 034, `key_month_spend`): a call's entries (hold, release, charge, cap credit) sum to what it took
 * from the balance, and their reserved deltas to what it still holds. One row, however many calls the month had.
 */
export async function keyMonthSpend(db: DbOrTrx, input: { orgId: string; keyId: string; month: Date }): Promise<KeySpend> {
  const row = (await db('key_month_spend')
    .where({ org_id: input.orgId, api_key_id: input.keyId, month: input.month.toISOString().slice(0, 10) })
    .first('spent_micros', 'held_micros')) as { spent_micros: string; held_micros: string } | undefined;
  return { spentMicros: BigInt(row?.spent_micros ?? 0), heldMicros: BigInt(row?.held_micros ?? 0) };
}

/** The owner hears of a key's budget once a month per key, from the first call it refuses (issue 41 item 4). */
export async function raiseKeyBudgetReached(
  db: DbOrTrx,
  input: { orgId: string; keyId: string; figures: KeyBudgetFigures },
): Promise<void> {
  const { orgId, keyId, figures } = input;
  await raiseAccountEvent(db, {
    orgId,
    type: 'key.budget_reached',
    dedupeKey: `key.budget_reached:${keyId}:${monthStartUtc().toISOString().slice(0, 7)}`,
    data: {
      key_id: keyId,
      monthly_budget_usd: microsToUsd(figures.budgetMicros),
      spent_usd: microsToUsd(figures.spentMicros),
      held_usd: microsToUsd(figures.heldMicros),
    },
  });
}

/** Keys not revoked whose expiry falls in [from, to): what a `key.expiring` alert reads. */
export async function keysExpiringBetween(db: DbOrTrx, from: Date, to: Date): Promise<(KeyListing & { orgId: string })[]> {
  const rows = (await db('api_keys')
    .whereNull('revoked_at')
    .where('expires_at', '>=', from)
    .where('expires_at', '<', to)
    .orderBy('expires_at')
    .select([...LISTING_COLUMNS, 'org_id'])) as (ListingRow & { org_id: string })[];
  return rows.map((r) => ({ ...toListing(r), orgId: r.org_id }));
}
