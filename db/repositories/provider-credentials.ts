import { z } from 'zod';
import { QuorumError } from '../../domain/errors';
import { registerSecret } from '../../infra/redact';
import type { SecretBox } from '../../infra/secret-box';
import { unknownOrgAsNotFound, type DbOrTrx } from './shared';

/**
 * Bring-your-own provider access (spec 01 item 13), configured by the organisation owner. Three families store an
 * API key sealed with AES-256-GCM; Bedrock stores a role ARN + external id assumed per request (nothing secret).
 * Keys are decrypted only in `getProviderCredential`, and every key seen is registered for log redaction.
 */
export const KEY_FAMILIES = ['openai', 'anthropic', 'google'] as const;
export type KeyFamily = (typeof KEY_FAMILIES)[number];
export type ProviderFamily = KeyFamily | 'bedrock';

export type ProviderCredential = { kind: 'api_key'; apiKey: string } | { kind: 'bedrock_role'; roleArn: string; externalId: string };

// The sealed key only opens on its own row: copying ciphertext to another organisation yields nothing.
const sealContext = (orgId: string, family: KeyFamily): string => `provider_credentials:${orgId}:${family}`;

const ProviderKey = z
  .string()
  .trim()
  .min(8, 'the provider key looks too short')
  .max(4096)
  .regex(/^\S+$/, 'the provider key must not contain whitespace');
const RoleArn = z
  .string()
  .regex(/^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]{1,512}$/, 'not an IAM role ARN (arn:aws:iam::<account>:role/<name>)');
// AWS's own constraint on sts:ExternalId.
const ExternalId = z.string().regex(/^[\w+=,.@:/-]{2,1224}$/, 'external id must be 2–1224 characters of [A-Za-z0-9+=,.@:/_-]');

function parse<T>(schema: z.ZodType<T>, value: unknown, param: string): T {
  const result = schema.safeParse(value);
  if (!result.success) throw new QuorumError('invalid_request', result.error.issues[0]?.message ?? `invalid ${param}`, { param });
  return result.data;
}

async function upsert(db: DbOrTrx, row: Record<string, unknown> & { org_id: string; family: ProviderFamily }): Promise<void> {
  await unknownOrgAsNotFound(row.org_id, () =>
    db('provider_credentials')
      .insert({ ...row, updated_at: db.fn.now() })
      .onConflict(['org_id', 'family'])
      .merge(),
  );
}

export async function setProviderKey(
  db: DbOrTrx,
  box: SecretBox,
  input: { orgId: string; family: KeyFamily; apiKey: string },
): Promise<void> {
  const family = parse(z.enum(KEY_FAMILIES), input.family, 'family');
  const apiKey = parse(ProviderKey, input.apiKey, 'apiKey');
  registerSecret(apiKey);
  const sealed = box.seal(apiKey, sealContext(input.orgId, family));
  await upsert(db, {
    org_id: input.orgId,
    family,
    ciphertext: sealed.ciphertext,
    iv: sealed.iv,
    tag: sealed.tag,
    role_arn: null,
    external_id: null,
  });
}

export async function setBedrockRole(db: DbOrTrx, input: { orgId: string; roleArn: string; externalId: string }): Promise<void> {
  const roleArn = parse(RoleArn, input.roleArn, 'roleArn');
  const externalId = parse(ExternalId, input.externalId, 'externalId');
  await upsert(db, {
    org_id: input.orgId,
    family: 'bedrock',
    ciphertext: null,
    iv: null,
    tag: null,
    role_arn: roleArn,
    external_id: externalId,
  });
}

/** Removes the organisation's own access of a family; whether there was one. */
export async function removeProviderCredential(db: DbOrTrx, orgId: string, family: string): Promise<boolean> {
  return (await db('provider_credentials').where({ org_id: orgId, family }).del()) > 0;
}

/** The families an organisation has its own provider access for (never their secrets). */
export async function ownProviderFamilies(db: DbOrTrx, orgId: string): Promise<Set<string>> {
  const rows = (await db('provider_credentials').where({ org_id: orgId }).select('family')) as { family: string }[];
  return new Set(rows.map((r) => r.family));
}

export async function getProviderCredential(
  db: DbOrTrx,
  box: SecretBox,
  orgId: string,
  family: ProviderFamily,
): Promise<ProviderCredential | undefined> {
  const row = (await db('provider_credentials')
    .where({ org_id: orgId, family })
    .first('ciphertext', 'iv', 'tag', 'role_arn', 'external_id')) as
    { ciphertext: Buffer | null; iv: Buffer | null; tag: Buffer | null; role_arn: string | null; external_id: string | null } | undefined;
  if (!row) return undefined;
  if (family === 'bedrock') {
    if (!row.role_arn || !row.external_id) throw new Error(`bedrock credential of ${orgId} lacks its role`);
    return { kind: 'bedrock_role', roleArn: row.role_arn, externalId: row.external_id };
  }
  if (!row.ciphertext || !row.iv || !row.tag) throw new Error(`${family} credential of ${orgId} lacks its ciphertext`);
  const apiKey = box.open({ ciphertext: row.ciphertext, iv: row.iv, tag: row.tag }, sealContext(orgId, family));
  registerSecret(apiKey);
  return { kind: 'api_key', apiKey };
}
