import { admitRequest, type Admission } from '../db/repositories/limits';
import {
  connectedAppsOf,
  loadOAuthKeys,
  OAuthStore,
  purgeExpiredOAuthRecords,
  revokeConnectedApp,
  rotateOAuthKeys,
  type ConnectedApp,
  type OAuthKeys,
} from '../db/repositories/oauth-store';
import { QuorumError } from '../domain/errors';
import type { SecretBox } from '../infra/secret-box';
import type { Principal } from './principal';
import type { OperationDeps, StoreDeps } from './deps';

/**
 * Connected apps (DESIGN §15): the grants a person gave apps, which they revoke; the authorization server's upkeep by
 * the operator (its keys are sealed with the secret box; expired tokens, codes and sessions cleared out); and what the
 * authorization server itself (api/oauth/server.ts) keeps in Postgres: its keys, its records, its registrations.
 */

export async function connectedApps(deps: StoreDeps, principal: Principal & { via: 'person' }): Promise<ConnectedApp[]> {
  return connectedAppsOf(deps.db, principal.person.id);
}

/** Revokes an app's grant of the person: its tokens stop working. */
export async function revokeApp(deps: StoreDeps, principal: Principal & { via: 'person' }, grantId: string): Promise<void> {
  if (!(await revokeConnectedApp(deps.db, principal.person.id, grantId)))
    throw new QuorumError('not_found', 'No such app acts for you; it may already be revoked.');
}

/** New signing and cookie keys; APIs use them from their next start. */
export async function rotateAuthorizationKeys(
  deps: Pick<OperationDeps, 'db' | 'box'>,
  _principal: Principal & { via: 'operator' },
): Promise<{ signing: string; cookie: string }> {
  return rotateOAuthKeys(deps.db, deps.box);
}

/** Removes expired OAuth records; how many. */
export async function purgeExpiredGrants(deps: StoreDeps, _principal: Principal & { via: 'operator' }): Promise<number> {
  return purgeExpiredOAuthRecords(deps.db);
}

/** The authorization server's signing and cookie keys, opened with `box`; generated and sealed at the first start. */
export async function authorizationKeys(deps: StoreDeps, box: SecretBox): Promise<OAuthKeys> {
  return loadOAuthKeys(deps.db, box);
}

/** Where the authorization server keeps one model's records (Client, Grant, AccessToken…): its `oidc-provider` adapter. */
export function authorizationStore(deps: StoreDeps, model: string): OAuthStore {
  return new OAuthStore(deps.db, model);
}

const HOUR_MS = 3_600_000;

/** Counts one app registration from the address `ip` against `perHour` in the last hour. */
export async function countAppRegistration(deps: StoreDeps, ip: string, perHour: number): Promise<Admission> {
  return admitRequest(deps.db, `oauth-reg:${ip}`, perHour, HOUR_MS);
}
