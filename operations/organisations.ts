import type { StoreDeps, TemporalOptional } from './deps';
import {
  createOrganisation,
  insertOwnedOrganisation,
  organisationStatus,
  setOrganisationStatus,
  type CreatedOrganisation,
  type NewOrganisation,
} from '../db/repositories/organisations';
import { SCOPES } from '../domain/api-keys';
import type { OrganisationStatus } from '../domain/billing';
import { QuorumError } from '../domain/errors';
import { startTrialTimer } from '../starters/trial-credit';
import { memberOrg, type KeyPrincipal, type Principal } from './principal';

/**
 * Starts the organisation's trial-expiry timer. A new organisation must never be lost because Temporal is away, so a
 * failure is logged and the timer deferred: the worker's `ensureTrialTimers` starts it when the stack next starts.
 * Returns whether it started now.
 */
export async function startTrial(deps: TemporalOptional<'db' | 'log'>, org: { orgId: string; trialStartedAt: Date }): Promise<boolean> {
  if (!deps.client) {
    deps.log.warn('trial timer deferred: Temporal is not reachable; ensureTrialTimers starts it when the stack next starts', {
      orgId: org.orgId,
    });
    return false;
  }
  return startTrialTimer(deps.db, deps.client, { orgId: org.orgId, trialStartedAt: org.trialStartedAt.toISOString() }).then(
    () => true,
    (err: unknown) => {
      deps.log.warn('trial timer deferred', { orgId: org.orgId, err });
      return false;
    },
  );
}

/** A signed-in person creates an organisation they own; its trial timer starts. */
export async function createOwnOrganisation(
  deps: TemporalOptional<'db' | 'log'>,
  principal: Principal & { via: 'person' },
  name: string,
): Promise<NewOrganisation> {
  const org = await insertOwnedOrganisation(deps.db, principal.person.id, name);
  await startTrial(deps, org);
  return org;
}

/** The operator onboards an organisation with its owner's key (shown once) and an optional prepaid credit. */
export async function onboardOrganisation(
  deps: TemporalOptional<'db' | 'log'>,
  _principal: Principal & { via: 'operator' },
  input: { name: string; creditMicros?: bigint },
): Promise<CreatedOrganisation & { trialTimerStarted: boolean }> {
  const org = await createOrganisation(deps.db, input);
  // The key is shown only now, so a failure to reach Temporal must not hide it: the timer is deferred instead.
  return { ...org, trialTimerStarted: await startTrial(deps, org) };
}

/** The operator suspends or resumes an organisation. */
export async function setStatus(
  deps: StoreDeps,
  _principal: Principal & { via: 'operator' },
  orgId: string,
  status: OrganisationStatus,
): Promise<void> {
  await setOrganisationStatus(deps.db, orgId, status);
}

/**
 * How a person in the console reaches the same operations a key does. The console has a person, not a key, so this
 * builds the key principal those operations take, as a member of the organisation acts:
 * - mode `live`: a person's launches are real and billed (a test key's simulated runs are the API's, not the console's);
 * - every scope and no allowed-modes limit: a member may build and run all of the organisation's modes (DESIGN §14);
 * - no per-key limits: the organisation's own limits (daily launches, balance) still hold in the operations;
 * - `keyId` `console:<personId>`: `runs.api_key_id` (like `requests` and `quotes`) is plain text with no foreign
 *   key, so a run launched here records who launched it, and never reads as one of the organisation's keys;
 * - `isOwner` from the person's role, as the owner's key.
 * A suspended organisation is refused as its keys are (`org_suspended`).
 */
export async function memberAuth(deps: StoreDeps, principal: Principal & { via: 'person' }): Promise<KeyPrincipal> {
  const orgId = memberOrg(principal);
  if ((await organisationStatus(deps.db, orgId)) !== 'active') throw new QuorumError('org_suspended', 'The organisation is suspended.');
  return {
    via: 'key',
    edge: 'console',
    ...(principal.ip !== undefined && { ip: principal.ip }),
    keyId: `console:${principal.person.id}`,
    orgId,
    keyKind: 'live',
    scopes: [...SCOPES],
    allowedModes: null,
    limits: { requestsPerMinute: null, concurrency: null, maxInputTokens: null, maxCostMicros: null },
    isOwner: principal.role === 'owner',
  };
}
