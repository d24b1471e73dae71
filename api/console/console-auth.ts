import type { AuthoringDeps, Author } from '../../operations/authoring/modes';
import type { AuthContext } from '../../db/repositories/api-keys';
import type { Membership } from '../../db/repositories/people';
import { organisationStatus } from '../../db/repositories/organisations';
import { SCOPES } from '../../domain/api-keys';
import { QuorumError } from '../../domain/errors';
import type { ConsoleDeps } from './deps';
import type { ConsoleUser } from './session';

/**
 * How a person in the console reaches the same operations a key does. The console has a person, not a key, so it
 * builds the key-shaped `AuthContext` the operations take, as a member of the organisation acts:
 * - mode `live`: a person's launches are real and billed (a test key's simulated runs are the API's, not the console's);
 * - every scope and no allowed-modes limit: a member may build and run all of the organisation's modes (DESIGN §14);
 * - no per-key limits: the organisation's own limits (daily launches, balance) still hold in the operations;
 * - `keyId` `console:<personId>`: `runs.api_key_id` (like `requests` and `quotes`) is plain text with no foreign
 *   key, so a run launched here records who launched it, and never reads as one of the organisation's keys;
 * - `isOwner` from the person's role, as the owner's key.
 * A suspended organisation is refused as its keys are (`org_suspended`).
 */
export async function consoleAuth(deps: Pick<ConsoleDeps, 'db'>, user: ConsoleUser, org: Membership): Promise<AuthContext> {
  if ((await organisationStatus(deps.db, org.orgId)) !== 'active') throw new QuorumError('org_suspended', 'The organisation is suspended.');
  return {
    keyId: `console:${user.session.person.id}`,
    orgId: org.orgId,
    mode: 'live',
    scopes: [...SCOPES],
    allowedModes: null,
    limits: { requestsPerMinute: null, concurrency: null, maxInputTokens: null, maxCostMicros: null },
    isOwner: org.role === 'owner',
  };
}

export interface Authoring {
  deps: AuthoringDeps;
  author: Author;
}

/** The mode builder's core, as the console calls it: a person of `org` in the builder. */
export function consoleAuthoring(deps: ConsoleDeps, org: Membership): Authoring {
  return { deps: { db: deps.db, form: deps.form, engines: deps.engines, env: deps.env }, author: { via: 'console', orgId: org.orgId } };
}
