import { z } from 'zod';
import { generateApiKey, hashApiKey, parseApiKeyKind, randomBase62, SCOPES, type KeyKind, type Scope } from '../../domain/api-keys';
import { QuorumError } from '../../domain/errors';
import type { AppPrincipal } from '../../domain/plans';
import { unknownOrgAsNotFound, type DbOrTrx } from './shared';

/** Per-key overrides of the spec's limits; null = the service default. */
export interface KeyLimits {
  requestsPerMinute: number | null;
  concurrency: number | null;
  maxInputTokens: number | null;
  maxCostMicros: bigint | null;
}

export interface AuthContext {
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
}

export interface CreateApiKeyInput {
  orgId: string;
  keyKind: KeyKind;
  scopes?: readonly Scope[];
  allowedModes?: readonly string[] | null;
  limits?: Partial<KeyLimits>;
  expiresAt?: Date | null;
  isOwner?: boolean;
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
  const { scopes, allowedModes, limits } = parsed.data;
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
  org_status: 'active' | 'suspended';
}

/** Spec order: unknown key 401 → revoked/expired 401 → suspended organisation 403. Lookup is by hash only. */
export async function authenticate(db: DbOrTrx, rawKey: string): Promise<AuthContext> {
  if (!parseApiKeyKind(rawKey)) throw new QuorumError('invalid_api_key', 'The API key is missing or malformed.');
  const row = (await db('api_keys as k')
    .join('organisations as o', 'o.id', 'k.org_id')
    .where('k.key_hash', hashApiKey(rawKey))
    .first(
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
      'o.status as org_status',
    )) as KeyRow | undefined;
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
  };
}

/** Revocation is permanent; revoking twice keeps the first time. Unknown key → `not_found`. */
export async function revokeApiKey(db: DbOrTrx, keyId: string): Promise<void> {
  const updated = await db('api_keys')
    .where({ id: keyId })
    .update({ revoked_at: db.raw('coalesce(revoked_at, now())') });
  if (updated === 0) throw new QuorumError('not_found', `no API key ${keyId}`);
}

export interface KeyListing {
  id: string;
  keyKind: KeyKind;
  /** What the key looks like without its secret: `qrm_live_…abcd`. */
  display: string;
  scopes: Scope[];
  createdAt: Date;
  revokedAt: Date | null;
}

/** An organisation's keys as the console lists them; never a secret, only the prefix and last four characters. */
export async function listApiKeys(db: DbOrTrx, orgId: string): Promise<KeyListing[]> {
  const rows = (await db('api_keys')
    .where({ org_id: orgId })
    .orderBy('created_at', 'desc')
    .select('id', 'mode', 'prefix', 'last4', 'scopes', 'created_at', 'revoked_at')) as {
    id: string;
    mode: KeyKind;
    prefix: string;
    last4: string;
    scopes: Scope[];
    created_at: Date;
    revoked_at: Date | null;
  }[];
  return rows.map((r) => ({
    id: r.id,
    keyKind: r.mode,
    display: `${r.prefix}…${r.last4}`,
    scopes: r.scopes,
    createdAt: r.created_at,
    revokedAt: r.revoked_at,
  }));
}
