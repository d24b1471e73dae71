import type { Person, Role } from '../db/repositories/people';
import { QuorumError } from '../domain/errors';

/**
 * Who acts on an operation called from the console or the CLI: a signed-in person (in the organisation their session
 * has chosen, with their role there), or the operator at the CLI, who may act on any organisation. REST and MCP
 * operations take the caller's key (`AuthContext`) instead.
 */
export type Principal =
  | {
      via: 'person';
      person: Person;
      orgId: string | null;
      role: Role | null;
      /** The client's address as the console saw it: the activity log's "from where" (issue 41). */
      ip?: string;
    }
  | { via: 'operator' };

/** A person acting in an organisation they belong to; the organisation's id. */
export function memberOrg(principal: Principal & { via: 'person' }): string {
  if (principal.orgId === null) throw new QuorumError('forbidden', 'You do not belong to an organisation yet.');
  return principal.orgId;
}

/** The organisation an operation acts on: a person's own (chosen by their session), or the one the operator names. */
export function orgActedOn(principal: Principal, orgId?: string): string {
  if (principal.via === 'person') return memberOrg(principal);
  if (orgId === undefined) throw new QuorumError('invalid_request', 'name the organisation', { param: 'org' });
  return orgId;
}

/** Only the organisation's owner (or the operator) may do this; `refusal` says so. */
export function requireOwner(principal: Principal, refusal: string): void {
  if (principal.via === 'person' && principal.role !== 'owner') throw new QuorumError('forbidden', refusal);
}
