import {
  connectedAppsOf,
  purgeExpiredOAuthRecords,
  revokeConnectedApp,
  rotateOAuthKeys,
  type ConnectedApp,
} from '../db/repositories/oauth-store';
import { QuorumError } from '../domain/errors';
import { secretBox } from '../infra/secret-box';
import type { Principal } from './principal';
import type { StoreDeps } from './deps';

/**
 * Connected apps (DESIGN §15): the grants a person gave apps, which they revoke; and the authorization server's
 * upkeep by the operator (its keys are sealed with the secret box; expired tokens, codes and sessions cleared out).
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
  deps: StoreDeps,
  _principal: Principal & { via: 'operator' },
): Promise<{ signing: string; cookie: string }> {
  return rotateOAuthKeys(deps.db, secretBox());
}

/** Removes expired OAuth records; how many. */
export async function purgeExpiredGrants(deps: StoreDeps, _principal: Principal & { via: 'operator' }): Promise<number> {
  return purgeExpiredOAuthRecords(deps.db);
}
