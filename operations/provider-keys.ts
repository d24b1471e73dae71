import {
  KEY_FAMILIES,
  ownProviderFamilies,
  removeProviderCredential,
  setBedrockRole,
  setProviderKey,
  type KeyFamily,
} from '../db/repositories/provider-credentials';
import { QuorumError } from '../domain/errors';
import { recordActivity } from './activity';
import { orgActedOn, requireOwner, type Principal } from './principal';
import type { OperationDeps, StoreDeps } from './deps';

/** An organisation's own provider keys (DESIGN §14): stored encrypted, set by its owner or the operator only. */

export { KEY_FAMILIES, type KeyFamily };

const OWNER_ONLY = 'Only the organisation owner configures provider keys.';

/** The families (openai, anthropic, google, bedrock) the organisation has its own credentials for. */
export async function ownProviderKeysOf(deps: StoreDeps, principal: Principal, orgId?: string): Promise<Set<string>> {
  return ownProviderFamilies(deps.db, orgActedOn(principal, orgId));
}

/** Stores a provider API key, encrypted; never echoed. */
export async function setOwnProviderKey(
  deps: Pick<OperationDeps, 'db' | 'box'>,
  principal: Principal,
  input: { orgId?: string; family: string; apiKey: string },
): Promise<void> {
  requireOwner(principal, OWNER_ONLY);
  const family = KEY_FAMILIES.find((f) => f === input.family);
  if (!family) throw new QuorumError('invalid_request', 'Choose openai, anthropic or google.', { param: 'family' });
  const orgId = orgActedOn(principal, input.orgId);
  // The record names the family only: the key itself is a secret.
  await deps.db.transaction(async (trx) => {
    await setProviderKey(trx, deps.box, { orgId, family, apiKey: input.apiKey });
    await recordActivity(trx, orgId, principal, { kind: 'provider_key.set', subject: family, detail: { family } });
  });
}

/** Sets the Bedrock role the organisation's Bedrock seats assume. */
export async function setOwnBedrockRole(
  deps: StoreDeps,
  principal: Principal,
  input: { orgId?: string; roleArn: string; externalId: string },
): Promise<void> {
  requireOwner(principal, OWNER_ONLY);
  const orgId = orgActedOn(principal, input.orgId);
  // The external id guards the role like a shared secret: the record names the role only.
  await deps.db.transaction(async (trx) => {
    await setBedrockRole(trx, { orgId, roleArn: input.roleArn, externalId: input.externalId });
    await recordActivity(trx, orgId, principal, {
      kind: 'provider_key.set',
      subject: 'bedrock',
      detail: { family: 'bedrock', role_arn: input.roleArn },
    });
  });
}

/** Removes the organisation's own access of a family (its seats then run on the service's keys); 404 when none is set. */
export async function removeOwnProviderKey(
  deps: StoreDeps,
  principal: Principal,
  input: { orgId?: string; family: string },
): Promise<void> {
  requireOwner(principal, OWNER_ONLY);
  const family = [...KEY_FAMILIES, 'bedrock'].find((f) => f === input.family);
  if (!family) throw new QuorumError('invalid_request', 'Choose openai, anthropic, google or bedrock.', { param: 'family' });
  const orgId = orgActedOn(principal, input.orgId);
  await deps.db.transaction(async (trx) => {
    if (!(await removeProviderCredential(trx, orgId, family)))
      throw new QuorumError('not_found', `No ${family} access is set for this organisation.`, { param: 'family' });
    await recordActivity(trx, orgId, principal, { kind: 'provider_key.removed', subject: family, detail: { family } });
  });
}
