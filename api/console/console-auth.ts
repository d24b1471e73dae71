import type { AuthoringDeps, Author } from '../../operations/authoring/modes';
import type { RouteDeps } from '../http/context';
import type { AuthContext } from '../../db/repositories/api-keys';
import type { Membership } from '../../db/repositories/people';
import { memberAuth } from '../../operations/organisations';
import type { ConsoleUser } from './session';

/** How a person in the console reaches the same operations a key does (see `memberAuth`). */
export async function consoleAuth(deps: Pick<RouteDeps, 'db'>, user: ConsoleUser, org: Membership): Promise<AuthContext> {
  return memberAuth(deps, { via: 'person', person: user.session.person, orgId: org.orgId, role: org.role });
}

export interface Authoring {
  deps: AuthoringDeps;
  author: Author;
}

/** The mode builder's core, as the console calls it: a person of `org` in the builder (`user`: who, for the activity log). */
export function consoleAuthoring(deps: RouteDeps, org: Membership, user?: ConsoleUser): Authoring {
  const by = user && { kind: 'person' as const, id: user.session.person.id, edge: 'console' as const, ip: user.ip };
  return {
    deps: { db: deps.db, form: deps.form, engines: deps.engines, config: deps.config },
    author: { via: 'console', orgId: org.orgId, ...(by && { by }) },
  };
}
