import { createApiKey, listApiKeys, revokeApiKey, type KeyListing } from '../db/repositories/api-keys';
import type { KeyKind, Scope } from '../domain/api-keys';
import { QuorumError } from '../domain/errors';
import { orgActedOn, type Principal } from './principal';
import type { StoreDeps } from './deps';

/** API keys (DESIGN §8): issued shown once (only a hash is stored), listed, revoked. */

/** The organisation's keys, newest first (prefix and last four characters only). */
export async function keysOf(deps: StoreDeps, principal: Principal, orgId?: string): Promise<KeyListing[]> {
  return listApiKeys(deps.db, orgActedOn(principal, orgId));
}

/** A new key of the organisation; the key itself is in the result only, shown once. */
export async function issueKey(
  deps: StoreDeps,
  principal: Principal,
  input: { orgId?: string; keyKind: KeyKind; scopes?: readonly Scope[]; allowedModes?: readonly string[] | null },
): Promise<{ keyId: string; apiKey: string }> {
  return createApiKey(deps.db, {
    orgId: orgActedOn(principal, input.orgId),
    keyKind: input.keyKind,
    scopes: input.scopes,
    allowedModes: input.allowedModes,
  });
}

/** Revokes a key: a person only one of their organisation's, the operator any. */
export async function revokeKey(deps: StoreDeps, principal: Principal, keyId: string): Promise<void> {
  if (principal.via === 'person') {
    const own = (await listApiKeys(deps.db, orgActedOn(principal))).some((k) => k.id === keyId);
    if (!own) throw new QuorumError('not_found', 'No such key in this organisation.');
  }
  await revokeApiKey(deps.db, keyId);
}
