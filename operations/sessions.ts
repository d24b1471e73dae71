import {
  createSession,
  deleteSession,
  deleteSessionsOf,
  membershipsOf,
  readSession,
  setSessionOrg,
  type Membership,
  type Session,
} from '../db/repositories/people';
import { QuorumError } from '../domain/errors';
import type { Principal } from './principal';
import type { StoreDeps } from './deps';

/** Console sessions (DESIGN §14): server-side rows behind an HttpOnly cookie; only the token's hash is stored. */

/** The live session behind a cookie's token with the person's memberships; undefined when unknown or expired. */
export async function sessionOf(deps: StoreDeps, token: string): Promise<{ session: Session; memberships: Membership[] } | undefined> {
  const session = await readSession(deps.db, token);
  return session && { session, memberships: await membershipsOf(deps.db, session.person.id) };
}

/** A new session for a person who just signed in or up; the token goes in the cookie. */
export async function openSession(deps: StoreDeps, personId: string, orgId: string | null): Promise<{ token: string }> {
  const { token } = await createSession(deps.db, personId, orgId);
  return { token };
}

/** Signs out the session with this token hash. */
export async function closeSession(deps: StoreDeps, tokenHash: string): Promise<void> {
  await deleteSession(deps.db, tokenHash);
}

/** Sign out everywhere: every session of the person ends. */
export async function closeEverySession(deps: StoreDeps, principal: Principal & { via: 'person' }): Promise<void> {
  await deleteSessionsOf(deps.db, principal.person.id);
}

/** The session acts in another organisation from now on; only one the person belongs to. */
export async function chooseOrganisation(
  deps: StoreDeps,
  principal: Principal & { via: 'person' },
  session: { tokenHash: string },
  orgId: string,
): Promise<void> {
  const memberships = await membershipsOf(deps.db, principal.person.id);
  if (!memberships.some((m) => m.orgId === orgId)) throw new QuorumError('forbidden', 'You are not a member of that organisation.');
  await setSessionOrg(deps.db, session.tokenHash, orgId);
}
