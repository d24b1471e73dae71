import { generateKeyPairSync, randomBytes, type JsonWebKey } from 'node:crypto';
import type { Knex } from 'knex';
import type { Adapter, AdapterPayload } from 'oidc-provider';
import { accountIdOf, parseAccountId } from '../../domain/plans';
import type { SecretBox } from '../../infra/secret-box';
import type { DbOrTrx } from './shared';

/**
 * Postgres storage for the OAuth authorization server (migration 015): `oidc-provider`'s adapter interface over
 * `oauth_records`, and its keys in `oauth_keys`, sealed with the secret box.
 */

interface RecordRow {
  payload: AdapterPayload;
  consumed_at: Date | null;
}

/** One model's artifacts (Client, Grant, AccessToken, RefreshToken, …): what `oidc-provider` calls an adapter. */
export class OAuthStore implements Adapter {
  constructor(
    private readonly db: DbOrTrx,
    private readonly model: string,
  ) {}

  async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
    const row = {
      model: this.model,
      id,
      payload: JSON.stringify(payload),
      grant_id: payload.grantId ?? null,
      uid: payload.uid ?? null,
      user_code: payload.userCode ?? null,
      expires_at: expiresIn ? this.db.raw('now() + make_interval(secs => ?)', [expiresIn]) : null,
    };
    await this.db('oauth_records').insert(row).onConflict(['model', 'id']).merge(['payload', 'grant_id', 'uid', 'user_code', 'expires_at']);
  }

  private async findWhere(where: Record<string, string>): Promise<AdapterPayload | undefined> {
    const row = (await this.db('oauth_records')
      .where({ model: this.model, ...where })
      .andWhere((q) => q.whereNull('expires_at').orWhere('expires_at', '>', this.db.fn.now()))
      .first('payload', 'consumed_at')) as RecordRow | undefined;
    if (!row) return undefined;
    return row.consumed_at ? { ...row.payload, consumed: Math.floor(row.consumed_at.getTime() / 1000) } : row.payload;
  }

  find(id: string): Promise<AdapterPayload | undefined> {
    return this.findWhere({ id });
  }

  findByUid(uid: string): Promise<AdapterPayload | undefined> {
    return this.findWhere({ uid });
  }

  findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
    return this.findWhere({ user_code: userCode });
  }

  async consume(id: string): Promise<void> {
    await this.db('oauth_records').where({ model: this.model, id }).update({ consumed_at: this.db.fn.now() });
  }

  async destroy(id: string): Promise<void> {
    await this.db('oauth_records').where({ model: this.model, id }).delete();
  }

  /** Every token issued under the grant, whatever its model: revoking a grant ends them all. */
  async revokeByGrantId(grantId: string): Promise<void> {
    await this.db('oauth_records').where({ grant_id: grantId }).delete();
  }
}

/** Expired artifacts are never read (find filters them); this clears them out. Returns how many went. */
export async function purgeExpiredOAuthRecords(db: DbOrTrx): Promise<number> {
  return db('oauth_records').where('expires_at', '<=', db.fn.now()).delete();
}

export type OAuthKeyPurpose = 'signing' | 'cookie';

export interface OAuthKeys {
  /** Private JWKs, newest first: the first signs, the rest still verify what they signed. */
  signing: JsonWebKeyWithKid[];
  /** Cookie signing secrets, newest first: the first signs, the rest still verify. */
  cookie: string[];
}

export type JsonWebKeyWithKid = JsonWebKey & { kid: string; alg: string; use: string };

const context = (id: string): string => `oauth_keys:${id}`;

function newKey(purpose: OAuthKeyPurpose): { id: string; secret: string } {
  const id = `${purpose === 'signing' ? 'sig' : 'ck'}_${randomBytes(8).toString('hex')}`;
  if (purpose === 'cookie') return { id, secret: randomBytes(32).toString('base64url') };
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { id, secret: JSON.stringify({ ...privateKey.export({ format: 'jwk' }), kid: id, alg: 'RS256', use: 'sig' }) };
}

/** Keys of each purpose kept live: the newest signs, the older ones still verify what they signed before a rotation. */
const KEYS_KEPT = 3;

/**
 * Adds a new signing key and cookie secret, sealed, and retires those more than KEYS_KEPT rotations old. The new
 * ones lead from the next time the keys are loaded (an API's start).
 */
export async function rotateOAuthKeys(db: DbOrTrx, box: SecretBox): Promise<{ signing: string; cookie: string }> {
  const ids = { signing: '', cookie: '' };
  for (const purpose of ['signing', 'cookie'] as const) {
    const key = newKey(purpose);
    const sealed = box.seal(key.secret, context(key.id));
    await db('oauth_keys').insert({ id: key.id, purpose, ciphertext: sealed.ciphertext, iv: sealed.iv, tag: sealed.tag });
    const kept = db('oauth_keys').where({ purpose }).whereNull('retired_at').orderBy('created_at', 'desc').limit(KEYS_KEPT).select('id');
    await db('oauth_keys').where({ purpose }).whereNull('retired_at').whereNotIn('id', kept).update({ retired_at: db.fn.now() });
    ids[purpose] = key.id;
  }
  return ids;
}

/**
 * The keys, generated at first start. Two processes starting at once may both generate: both sets are kept and the
 * newest leads, which is harmless.
 */
export async function loadOAuthKeys(db: DbOrTrx, box: SecretBox): Promise<OAuthKeys> {
  const read = async (): Promise<{ id: string; purpose: OAuthKeyPurpose; ciphertext: Buffer; iv: Buffer; tag: Buffer }[]> =>
    db('oauth_keys').whereNull('retired_at').orderBy('created_at', 'desc').orderBy('id').select('id', 'purpose', 'ciphertext', 'iv', 'tag');
  let rows = await read();
  if (!rows.some((r) => r.purpose === 'signing') || !rows.some((r) => r.purpose === 'cookie')) {
    await rotateOAuthKeys(db, box);
    rows = await read();
  }
  const open = (purpose: OAuthKeyPurpose): string[] =>
    rows.filter((r) => r.purpose === purpose).map((r) => box.open({ ciphertext: r.ciphertext, iv: r.iv, tag: r.tag }, context(r.id)));
  return { signing: open('signing').map((s) => JSON.parse(s) as JsonWebKeyWithKid), cookie: open('cookie') };
}

/** A connected app a person allowed: one grant, in one organisation. */
export interface ConnectedApp {
  grantId: string;
  clientId: string;
  appName: string;
  orgId: string;
  /** Resource → scopes granted there. */
  resources: Record<string, string[]>;
  grantedAt: Date;
}

/** `column` (a record's payload) is a grant of the person, whatever the organisation; LIKE's wildcards escaped. */
function grantOfPerson(db: DbOrTrx, column: string, personId: string): Knex.Raw {
  const prefix = accountIdOf(personId, '').replace(/[\\%_]/g, '\\$&');
  return db.raw(`${column}->>'accountId' like ? escape '\\'`, [`${prefix}%`]);
}

/** The person's grants still in force, newest first (the grant's account is `personId:orgId`, see api/oauth/server.ts). */
export async function connectedAppsOf(db: DbOrTrx, personId: string): Promise<ConnectedApp[]> {
  const rows = (await db('oauth_records as g')
    .leftJoin('oauth_records as c', (j) => j.on('c.model', db.raw("'Client'")).andOn('c.id', db.raw("g.payload->>'clientId'")))
    .where('g.model', 'Grant')
    .andWhere(grantOfPerson(db, 'g.payload', personId))
    .andWhere((q) => q.whereNull('g.expires_at').orWhere('g.expires_at', '>', db.fn.now()))
    .orderByRaw("(g.payload->>'iat')::bigint desc")
    .select('g.id', 'g.payload', db.raw("c.payload->>'client_name' as client_name"))) as {
    id: string;
    payload: { accountId: string; clientId: string; iat: number; resources?: Record<string, string> };
    client_name: string | null;
  }[];
  return rows.flatMap((r) => {
    const account = parseAccountId(r.payload.accountId);
    if (!account) return [];
    return [
      {
        grantId: r.id,
        clientId: r.payload.clientId,
        appName: r.client_name ?? r.payload.clientId,
        orgId: account.orgId,
        resources: Object.fromEntries(Object.entries(r.payload.resources ?? {}).map(([k, v]) => [k, v.split(' ')])),
        grantedAt: new Date(r.payload.iat * 1000),
      },
    ];
  });
}

/**
 * Ends one of the person's grants and every token issued under it, in one transaction. False when it is not theirs
 * (or already gone): another person's grant is never touched.
 */
export async function revokeConnectedApp(db: DbOrTrx, personId: string, grantId: string): Promise<boolean> {
  return db.transaction(async (trx) => {
    const removed = await trx('oauth_records')
      .where({ model: 'Grant', id: grantId })
      .andWhere(grantOfPerson(trx, 'payload', personId))
      .delete();
    if (removed === 0) return false;
    await new OAuthStore(trx, 'Grant').revokeByGrantId(grantId);
    return true;
  });
}
