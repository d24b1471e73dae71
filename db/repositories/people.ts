import { createHash, randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { randomBase62 } from '../../domain/api-keys';
import { INVITATION_DAYS, SESSION_LIMITS, SIGN_IN_LIMITS } from '../../domain/people';
import { insertOwnedOrganisation } from './organisations';
import type { DbOrTrx } from './shared';

/**
 * People, their memberships, invitations, console sessions and sign-in attempts (DESIGN §14). Tokens handed to a
 * browser (a session cookie, an invitation link) are stored only as SHA-256 hashes, like API keys.
 */

export type Role = 'owner' | 'member';

export interface Person {
  id: string;
  email: string;
  name: string;
}

export interface Membership {
  orgId: string;
  orgName: string;
  role: Role;
}

export const tokenHash = (token: string): string => createHash('sha256').update(token).digest('hex');
const newToken = (): string => randomBytes(32).toString('base64url');

function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: string }).code === '23505';
}

/**
 * Sign-up: the person and, when `orgName` is given, their organisation (with its trial credit, and no API key: the
 * person issues keys in the console) with the person as owner, in one transaction. Undefined when the email is taken.
 */
export async function createPerson(
  db: Knex,
  input: { email: string; name: string; passwordHash: string; orgName?: string },
): Promise<{ person: Person; org?: { orgId: string; trialStartedAt: Date } } | undefined> {
  try {
    return await db.transaction(async (trx) => {
      const person: Person = { id: `psn_${randomBase62(20)}`, email: input.email, name: input.name };
      await trx('people').insert({ ...person, password_hash: input.passwordHash });
      if (input.orgName === undefined) return { person };
      const org = await insertOwnedOrganisation(trx, person.id, input.orgName);
      return { person, org: { orgId: org.orgId, trialStartedAt: org.trialStartedAt } };
    });
  } catch (err) {
    if (isUniqueViolation(err)) return undefined;
    throw err;
  }
}

export async function findPersonByEmail(db: DbOrTrx, email: string): Promise<(Person & { passwordHash: string }) | undefined> {
  const row = (await db('people').whereRaw('lower(email) = lower(?)', [email]).first('id', 'email', 'name', 'password_hash')) as
    { id: string; email: string; name: string; password_hash: string } | undefined;
  return row && { id: row.id, email: row.email, name: row.name, passwordHash: row.password_hash };
}

export async function membershipsOf(db: DbOrTrx, personId: string): Promise<Membership[]> {
  const rows = (await db('memberships as m')
    .join('organisations as o', 'o.id', 'm.org_id')
    .where('m.person_id', personId)
    .orderBy('m.created_at')
    .select('m.org_id', 'o.name', 'm.role')) as { org_id: string; name: string; role: Role }[];
  return rows.map((r) => ({ orgId: r.org_id, orgName: r.name, role: r.role }));
}

export async function membersOf(db: DbOrTrx, orgId: string): Promise<(Person & { role: Role })[]> {
  const rows = (await db('memberships as m')
    .join('people as p', 'p.id', 'm.person_id')
    .where('m.org_id', orgId)
    .orderBy('m.created_at')
    .select('p.id', 'p.email', 'p.name', 'm.role')) as (Person & { role: Role })[];
  return rows;
}

/** Removes a member who is not the owner; the removed person, or undefined when none such is a member. */
export async function removeMembership(db: DbOrTrx, orgId: string, personId: string): Promise<Person | undefined> {
  const removed = (await db('memberships as m')
    .where({ 'm.org_id': orgId, 'm.person_id': personId })
    .whereNot('m.role', 'owner')
    .del()
    .returning('m.person_id')) as { person_id: string }[];
  if (removed.length === 0) return undefined;
  return (await db('people').where({ id: personId }).first('id', 'email', 'name')) as Person;
}

export interface Session {
  tokenHash: string;
  person: Person;
  orgId: string | null;
  csrfToken: string;
}

/** A new session (sign-in rotates: the caller deletes the old one); the token goes in the cookie, its hash in the row. */
export async function createSession(db: DbOrTrx, personId: string, orgId: string | null): Promise<{ token: string; csrfToken: string }> {
  const token = newToken();
  const csrfToken = newToken();
  await db('sessions').insert({
    token_hash: tokenHash(token),
    person_id: personId,
    org_id: orgId,
    csrf_token: csrfToken,
    expires_at: db.raw(`now() + make_interval(days => ?)`, [SESSION_LIMITS.maxDays]),
  });
  return { token, csrfToken };
}

/** The live session behind a cookie's token, its last use moved on; undefined when unknown, idle too long or expired. */
export async function readSession(db: DbOrTrx, token: string): Promise<Session | undefined> {
  const result = await db.raw<{
    rows: { token_hash: string; org_id: string | null; csrf_token: string; id: string; email: string; name: string }[];
  }>(
    `update sessions s set last_seen_at = now() from people p
      where p.id = s.person_id and s.token_hash = ? and s.expires_at > now() and s.last_seen_at > now() - make_interval(hours => ?)
      returning s.token_hash, s.org_id, s.csrf_token, p.id, p.email, p.name`,
    [tokenHash(token), SESSION_LIMITS.idleHours],
  );
  const row = result.rows[0];
  return (
    row && {
      tokenHash: row.token_hash,
      orgId: row.org_id,
      csrfToken: row.csrf_token,
      person: { id: row.id, email: row.email, name: row.name },
    }
  );
}

export async function deleteSession(db: DbOrTrx, hash: string): Promise<void> {
  await db('sessions').where({ token_hash: hash }).delete();
}

/** Sign out everywhere: every session of the person ends. */
export async function deleteSessionsOf(db: DbOrTrx, personId: string): Promise<number> {
  return db('sessions').where({ person_id: personId }).delete();
}

export async function setSessionOrg(db: DbOrTrx, hash: string, orgId: string): Promise<void> {
  await db('sessions').where({ token_hash: hash }).update({ org_id: orgId });
}

export async function roleIn(db: DbOrTrx, personId: string, orgId: string): Promise<Role | undefined> {
  const row = (await db('memberships').where({ person_id: personId, org_id: orgId }).first('role')) as { role: Role } | undefined;
  return row?.role;
}

export async function recordSignIn(db: DbOrTrx, email: string, ip: string, succeeded: boolean): Promise<void> {
  await db('sign_in_attempts').insert({ email, ip, succeeded });
}

/**
 * Whether a sign-in may be tried now: failed attempts for the address and from the client in the window, and when
 * the oldest of them leaves it (the wait to tell the person).
 */
export async function signInAllowed(db: DbOrTrx, email: string, ip: string): Promise<{ allowed: boolean; retryAfterSeconds: number }> {
  const window = db.raw(`now() - make_interval(mins => ?)`, [SIGN_IN_LIMITS.windowMinutes]);
  const [byEmail, byIp] = (await Promise.all(
    [{ email }, { ip }].map((where) =>
      db('sign_in_attempts')
        .where(where)
        .andWhere({ succeeded: false })
        .andWhere('at', '>', window)
        .first(
          db.raw('count(*)::int as n'),
          db.raw(`ceil(extract(epoch from (min(at) + make_interval(mins => ${SIGN_IN_LIMITS.windowMinutes}) - now())))::int as wait`),
        ),
    ),
  )) as { n: number; wait: number | null }[];
  const emailBlocked = byEmail.n >= SIGN_IN_LIMITS.failuresPerEmail;
  const ipBlocked = byIp.n >= SIGN_IN_LIMITS.failuresPerIp;
  const waits = [emailBlocked ? byEmail.wait : 0, ipBlocked ? byIp.wait : 0].map((w) => w ?? 0);
  return { allowed: !emailBlocked && !ipBlocked, retryAfterSeconds: Math.max(1, ...waits) };
}

/** An invitation to `email`; the returned token goes in the link shown to the inviter. */
export async function createInvitation(db: DbOrTrx, input: { orgId: string; email: string; invitedBy: string }): Promise<string> {
  const token = newToken();
  await db('invitations').insert({
    token_hash: tokenHash(token),
    org_id: input.orgId,
    email: input.email,
    invited_by: input.invitedBy,
    expires_at: db.raw(`now() + make_interval(days => ?)`, [INVITATION_DAYS]),
  });
  return token;
}

export interface Invitation {
  orgId: string;
  orgName: string;
  email: string;
  expiresAt: Date;
  acceptedAt: Date | null;
}

export async function findInvitation(db: DbOrTrx, token: string): Promise<Invitation | undefined> {
  const row = (await db('invitations as i')
    .join('organisations as o', 'o.id', 'i.org_id')
    .where('i.token_hash', tokenHash(token))
    .first('i.org_id', 'o.name', 'i.email', 'i.expires_at', 'i.accepted_at')) as
    { org_id: string; name: string; email: string; expires_at: Date; accepted_at: Date | null } | undefined;
  return row && { orgId: row.org_id, orgName: row.name, email: row.email, expiresAt: row.expires_at, acceptedAt: row.accepted_at };
}

/** Joins the person to the invitation's organisation once; the organisation id, or undefined when it cannot be used. */
export async function acceptInvitation(db: Knex, token: string, person: Person): Promise<string | undefined> {
  return db.transaction(async (trx) => {
    const [row] = (await trx('invitations')
      .where({ token_hash: tokenHash(token) })
      .whereNull('accepted_at')
      .andWhere('expires_at', '>', trx.fn.now())
      .whereRaw('lower(email) = lower(?)', [person.email])
      .update({ accepted_at: trx.fn.now(), accepted_by: person.id })
      .returning('org_id')) as { org_id: string }[];
    if (!row) return undefined;
    await trx('memberships')
      .insert({ person_id: person.id, org_id: row.org_id, role: 'member' })
      .onConflict(['person_id', 'org_id'])
      .ignore();
    return row.org_id;
  });
}

export async function pendingInvitations(db: DbOrTrx, orgId: string): Promise<{ email: string; expiresAt: Date }[]> {
  const rows = (await db('invitations')
    .where({ org_id: orgId })
    .whereNull('accepted_at')
    .andWhere('expires_at', '>', db.fn.now())
    .orderBy('created_at', 'desc')
    .select('email', 'expires_at')) as { email: string; expires_at: Date }[];
  return rows.map((r) => ({ email: r.email, expiresAt: r.expires_at }));
}
