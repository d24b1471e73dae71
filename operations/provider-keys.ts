import { KEY_FAMILIES, ownProviderFamilies, setBedrockRole, setProviderKey, type KeyFamily } from '../db/repositories/provider-credentials';
import { QuorumError } from '../domain/errors';
import { orgActedOn, requireOwner, type Principal } from './principal';
import type { StoreDeps } from './deps';

/** An organisation's own provider keys (DESIGN §14): stored encrypted, set by its owner or the operator only. */

export { KEY_FAMILIES, type KeyFamily };

const OWNER_ONLY = 'Only the organisation owner configures provider keys.';

/** The families (openai, anthropic, google, bedrock) the organisation has its own credentials for. */
export async function ownProviderKeysOf(deps: StoreDeps, principal: Principal, orgId?: string): Promise<Set<string>> {
  return ownProviderFamilies(deps.db, orgActedOn(principal, orgId));
}

/** Stores a provider API key, encrypted; never echoed. */
export async function setOwnProviderKey(
  deps: StoreDeps,
  principal: Principal,
  input: { orgId?: string; family: string; apiKey: string },
): Promise<void> {
  requireOwner(principal, OWNER_ONLY);
  const family = KEY_FAMILIES.find((f) => f === input.family);
  if (!family) throw new QuorumError('invalid_request', 'Choose openai, anthropic or google.', { param: 'family' });
  await setProviderKey(deps.db, { orgId: orgActedOn(principal, input.orgId), family, apiKey: input.apiKey });
}

/** Sets the Bedrock role the organisation's Bedrock seats assume. */
export async function setOwnBedrockRole(
  deps: StoreDeps,
  principal: Principal,
  input: { orgId?: string; roleArn: string; externalId: string },
): Promise<void> {
  requireOwner(principal, OWNER_ONLY);
  await setBedrockRole(deps.db, { orgId: orgActedOn(principal, input.orgId), roleArn: input.roleArn, externalId: input.externalId });
}
