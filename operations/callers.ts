import { authenticate, authenticateAdmitting, type AuthenticatedKey } from '../db/repositories/api-keys';
import { authenticateApp, type AppGrant } from '../db/repositories/app-principals';
import { admitRequest, RATE_WINDOW_MS, type Admission } from '../db/repositories/limits';
import type { Scope } from '../domain/api-keys';
import type { StoreDeps } from './deps';
import type { KeyPrincipal } from './principal';

/**
 * The caller behind a request (DESIGN §8), as the edges' one gate (api/http/access.ts) finds it: the API key or the
 * connected app's grant it presents, and its requests per minute. The gate decides the order of the checks and what
 * each refusal says; these read and count, and make the principal of what they read.
 */

/** Where a key called from: the edge and the client's address, as the edge saw them. */
export type CallSite = Pick<KeyPrincipal, 'edge' | 'ip'>;

function principalOf(key: AuthenticatedKey, site: CallSite): KeyPrincipal {
  return { via: 'key', ...key, edge: site.edge, ...(site.ip !== undefined && { ip: site.ip }) };
}

/** The key behind a raw `qrm_…` key: 401 unknown, revoked or expired; 403 the organisation suspended. */
export async function authenticateKey(deps: StoreDeps, rawKey: string, site: CallSite): Promise<KeyPrincipal> {
  return principalOf(await authenticate(deps.db, rawKey), site);
}

/**
 * `authenticateKey` and one request counted against the key's requests per minute, in one statement (issue 42):
 * `admission` is undefined when the statement did not count it (the key refused, or an admin key, or one without
 * `scope`), and the gate counts it itself (`countRequests`) after its own checks.
 */
export async function authenticateKeyCounted(
  deps: StoreDeps,
  rawKey: string,
  site: CallSite,
  rate: { scope: Scope | null; defaultLimit: number },
): Promise<{ auth: KeyPrincipal; admission: Admission | undefined }> {
  const { auth, admission } = await authenticateAdmitting(deps.db, rawKey, { ...rate, windowMs: RATE_WINDOW_MS });
  return { auth: principalOf(auth, site), admission };
}

/** The caller a connected app's verified grant stands for: 401 the person left the organisation, 403 it is suspended. */
export async function authenticateGrant(deps: StoreDeps, grant: AppGrant, site: CallSite): Promise<KeyPrincipal> {
  return principalOf(await authenticateApp(deps.db, grant), site);
}

/** Counts `count` requests of the key (or grant) `keyId` against `limit` a minute, all or none. */
export async function countRequests(deps: StoreDeps, keyId: string, limit: number, count: number): Promise<Admission> {
  return admitRequest(deps.db, keyId, limit, RATE_WINDOW_MS, count);
}
