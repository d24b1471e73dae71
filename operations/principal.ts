import type { AuthenticatedKey } from '../db/repositories/api-keys';
import type { Person, Role } from '../db/repositories/people';
import type { ActivityActor, ActivityEdge } from '../domain/activity';
import { QuorumError } from '../domain/errors';

/**
 * Who acts on an operation, as every edge builds it and every operation takes it:
 * - `key`: a bearer API key or a connected app's access token on `/v1` or `/mcp` (built by callers.ts from the key's
 *   record), or a person in the console acting as the organisation's member where an operation needs a key
 *   (`memberAuth`);
 * - `person`: a signed-in person in the console, in the organisation their session has chosen, with their role there;
 * - `operator`: the operator at the CLI, who may act on any organisation.
 */
export type Principal = KeyPrincipal | PersonPrincipal | OperatorPrincipal;

/** A key calling, with what its record says (scopes, limits, the app's grant…) and where it called from. */
export interface KeyPrincipal extends AuthenticatedKey {
  via: 'key';
  /** The edge the key called (the activity log's "from where", issue 41). */
  edge: Exclude<ActivityEdge, 'cli'>;
  /** The client's address as the edge saw it. */
  ip?: string;
}

export interface PersonPrincipal {
  via: 'person';
  person: Person;
  orgId: string | null;
  role: Role | null;
  /** The client's address as the console saw it: the activity log's "from where" (issue 41). */
  ip?: string;
}

export interface OperatorPrincipal {
  via: 'operator';
  /**
   * The organisation the operator acts as, where an operation acts for one without naming it (the mode builder's
   * `--org`; null: the platform itself). Operations that take the organisation as an argument ignore it.
   */
  orgId?: string | null;
}

/** Who made a change, for the activity log: the key or person and where from, or the operator at the CLI. */
export function actorOf(principal: Principal): ActivityActor {
  if (principal.via === 'key') return { kind: 'key', id: principal.keyId, edge: principal.edge, ip: principal.ip ?? null };
  if (principal.via === 'person') return { kind: 'person', id: principal.person.id, edge: 'console', ip: principal.ip ?? null };
  return { kind: 'operator', id: null, edge: 'cli', ip: null };
}

/** A person acting in an organisation they belong to; the organisation's id. */
export function memberOrg(principal: PersonPrincipal): string {
  if (principal.orgId === null) throw new QuorumError('forbidden', 'You do not belong to an organisation yet.');
  return principal.orgId;
}

/** The organisation an operation acts on: a key's own, a person's chosen one, or the one the operator names. */
export function orgActedOn(principal: Principal, orgId?: string): string {
  if (principal.via === 'key') return principal.orgId;
  if (principal.via === 'person') return memberOrg(principal);
  if (orgId === undefined) throw new QuorumError('invalid_request', 'name the organisation', { param: 'org' });
  return orgId;
}

/** Only the organisation's owner (the owner's key, or the operator) may do this; `refusal` says so. */
export function requireOwner(principal: Principal, refusal: string): void {
  const owner = principal.via === 'operator' || (principal.via === 'person' ? principal.role === 'owner' : principal.isOwner);
  if (!owner) throw new QuorumError('forbidden', refusal);
}
