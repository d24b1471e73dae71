import {
  acceptInvitation,
  createInvitation,
  createPerson,
  findInvitation,
  findPersonByEmail,
  membersOf,
  pendingInvitations,
  recordSignIn,
  removeMembership,
  setSessionOrg,
  signInAllowed,
  type Invitation,
  type Person,
  type Role,
} from '../db/repositories/people';
import { QuorumError } from '../domain/errors';
import { normaliseEmail } from '../domain/people';
import { startTrial } from './organisations';
import { DECOY_HASH, hashPassword, passwordMatches } from './passwords';
import { memberOrg, requireOwner, type Principal } from './principal';
import type { StoreDeps, TemporalOptional } from './deps';
import { recordActivity } from './activity';

/** People (DESIGN §14): sign-up, sign-in, the organisation's members and invitations by link. */

/**
 * A person signs up, with a new organisation they own (and its trial timer) unless they came by invitation.
 * Undefined when an account with this email exists.
 */
export async function signUp(
  deps: TemporalOptional<'db' | 'log'>,
  input: { email: string; name: string; password: string; orgName?: string },
): Promise<{ person: Person; org?: { orgId: string; trialStartedAt: Date } } | undefined> {
  const created = await createPerson(deps.db, {
    email: input.email,
    name: input.name,
    passwordHash: await hashPassword(input.password),
    orgName: input.orgName,
  });
  if (created?.org) await startTrial(deps, created.org);
  return created;
}

export type SignIn =
  { outcome: 'signed_in'; person: Person } | { outcome: 'throttled'; retryAfterSeconds: number } | { outcome: 'refused' };

/** Checks a sign-in, rate limited per address and per IP; a missing address costs the time a wrong password does. */
export async function signIn(deps: StoreDeps, input: { email: string; password: string; ip: string }): Promise<SignIn> {
  const gate = await signInAllowed(deps.db, input.email, input.ip);
  if (!gate.allowed) return { outcome: 'throttled', retryAfterSeconds: gate.retryAfterSeconds };
  const person = await findPersonByEmail(deps.db, input.email);
  const ok = await passwordMatches(person?.passwordHash ?? (await DECOY_HASH), input.password);
  await recordSignIn(deps.db, input.email, input.ip, ok && person !== undefined);
  if (!ok || !person) return { outcome: 'refused' };
  return { outcome: 'signed_in', person: { id: person.id, email: person.email, name: person.name } };
}

/** The invitation behind a link's token, whatever its state (the page says why one cannot be used). */
export async function invitationOf(deps: StoreDeps, token: string): Promise<Invitation | undefined> {
  return token ? findInvitation(deps.db, token) : undefined;
}

/** The signed-in person joins the invitation's organisation, which their session then acts in. */
export async function joinByInvitation(
  deps: StoreDeps,
  principal: Principal & { via: 'person' },
  session: { tokenHash: string },
  token: string,
): Promise<string> {
  const orgId = await acceptInvitation(deps.db, token, principal.person);
  if (!orgId)
    throw new QuorumError('not_found', 'This invitation is not valid for your account: it was used, expired, or is for another address.');
  await setSessionOrg(deps.db, session.tokenHash, orgId);
  return orgId;
}

/** The owner invites someone by email; the token goes in the link shown once to the inviter. */
export async function invite(deps: StoreDeps, principal: Principal & { via: 'person' }, rawEmail: string): Promise<string> {
  requireOwner(principal, 'Only the owner invites people.');
  const email = normaliseEmail(rawEmail);
  if (!email) throw new QuorumError('invalid_request', 'Enter an email address like name@example.com.', { param: 'email' });
  const orgId = memberOrg(principal);
  // The invitation's token is its secret: the record names the address only.
  return deps.db.transaction(async (trx) => {
    const token = await createInvitation(trx, { orgId, email, invitedBy: principal.person.id });
    await recordActivity(trx, orgId, principal, { kind: 'member.invited', subject: email, detail: { email } });
    return token;
  });
}

/** The owner removes a member (never the owner); they lose the organisation at their next page. */
export async function removeMember(deps: StoreDeps, principal: Principal & { via: 'person' }, personId: string): Promise<void> {
  requireOwner(principal, 'Only the owner removes people.');
  const orgId = memberOrg(principal);
  await deps.db.transaction(async (trx) => {
    const removed = await removeMembership(trx, orgId, personId);
    if (!removed) throw new QuorumError('not_found', 'No such member, other than the owner, in this organisation.');
    await recordActivity(trx, orgId, principal, { kind: 'member.removed', subject: removed.id, detail: { email: removed.email } });
  });
}

/** The organisation's members and its invitations not yet accepted. */
export async function teamOf(
  deps: StoreDeps,
  principal: Principal & { via: 'person' },
): Promise<{ members: (Person & { role: Role })[]; pending: { email: string; expiresAt: Date }[] }> {
  const orgId = memberOrg(principal);
  const [members, pending] = await Promise.all([membersOf(deps.db, orgId), pendingInvitations(deps.db, orgId)]);
  return { members, pending };
}
