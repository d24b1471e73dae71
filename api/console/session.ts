import { baseUrlOf } from '../http/context';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { Membership, Session } from '../../db/repositories/people';
import { QuorumError } from '../../domain/errors';
import type { Principal } from '../../operations/principal';
import type { StoreDeps } from '../../operations/deps';
import { closeSession, sessionOf } from '../../operations/sessions';

/**
 * Who is signed in to the console, and the CSRF check every state-changing request passes (DESIGN §14). The session
 * cookie is HttpOnly, SameSite=Lax, scoped to `/console` (so no browser ever sends it to `/v1`), Secure in
 * production; only its hash is stored. Before sign-in, a double-submit cookie carries the CSRF token of the
 * sign-in and sign-up forms (a forged sign-in is an attack too).
 */

export const SESSION_COOKIE = 'quorum_session';
const ANON_CSRF_COOKIE = 'quorum_csrf';
const COOKIE_PATH = '/console';

export interface ConsoleUser {
  session: Session;
  memberships: Membership[];
  /** The organisation the console is showing, when the person belongs to one. */
  org: Membership | undefined;
  /** The client's address (behind the proxy, as Koa reads it): where the activity log says a change came from. */
  ip: string;
}

export interface ConsoleState {
  user?: ConsoleUser;
  /** The token this request's forms carry. */
  csrf: string;
}

export class ConsoleRefusal extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Runs an operation whose refusals are the console's own (membership, ownership, an invitation's link): shown as the
 * console words them, without the API error code the console adds to an API operation's refusal.
 */
export async function refusingPlainly<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    if (err instanceof QuorumError) throw new ConsoleRefusal(err.spec.status, err.message);
    throw err;
  }
}

/** A request refused before its session was read (a bearer key) renders as a visitor's, with no form token. */
export function consoleState(ctx: Context): ConsoleState {
  return (ctx.state.console as ConsoleState | undefined) ?? { csrf: '' };
}

export function cookieOptions(secure: boolean): { httpOnly: true; sameSite: 'lax'; path: string; secure: boolean; overwrite: true } {
  return { httpOnly: true, sameSite: 'lax', path: COOKIE_PATH, secure, overwrite: true };
}

function sameToken(a: string | undefined, b: string): boolean {
  if (typeof a !== 'string') return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Loads the session; refuses bearer keys; checks the CSRF token and Origin of every request that changes something. */
export function consoleSession(deps: StoreDeps, opts: { secureCookies: boolean }) {
  return async (ctx: Context, next: Next): Promise<void> => {
    // The console takes a signed-in session only: a bearer key here is a misdirected API call (DESIGN §14).
    if (ctx.get('authorization'))
      throw new ConsoleRefusal(401, 'The console takes a signed-in session, not an API key. Call the API at /v1 with your key.');
    const token = ctx.cookies.get(SESSION_COOKIE);
    const found = token ? await sessionOf(deps, token) : undefined;
    if (token && !found) ctx.cookies.set(SESSION_COOKIE, null, cookieOptions(opts.secureCookies));
    const session = found?.session;
    const user: ConsoleUser | undefined = found && {
      ...found,
      org: found.memberships.find((m) => m.orgId === found.session.orgId) ?? found.memberships[0],
      ip: ctx.ip,
    };
    let csrf = session?.csrfToken;
    if (!csrf) {
      csrf = ctx.cookies.get(ANON_CSRF_COOKIE) ?? randomBytes(24).toString('base64url');
      ctx.cookies.set(ANON_CSRF_COOKIE, csrf, cookieOptions(opts.secureCookies));
    }
    ctx.state.console = { user, csrf } satisfies ConsoleState;
    if (!['GET', 'HEAD'].includes(ctx.method)) {
      const origin = ctx.get('origin');
      if (origin && origin !== baseUrlOf(ctx)) throw new ConsoleRefusal(403, 'This form was sent from another site; it was refused.');
      const sent = (ctx.request.body as Record<string, unknown> | undefined)?._csrf ?? ctx.get('x-csrf-token');
      if (!sameToken(typeof sent === 'string' ? sent : undefined, csrf))
        throw new ConsoleRefusal(403, 'This form has expired or did not come from the console; reload the page and try again.');
    }
    await next();
  };
}

/**
 * Where a visitor goes back to after signing in or up: only a path inside the console (a `next` elsewhere would make
 * sign-in an open redirect); undefined for anything else.
 */
export function consoleNext(next: unknown): string | undefined {
  return typeof next === 'string' && /^\/console(\/|$)/.test(next) && !next.startsWith('//') ? next : undefined;
}

/** `path` carrying `next` along when it is one: a request (an app's authorization) survives sign-in and sign-up alike. */
export function withNext(path: string, next: unknown): string {
  const safe = consoleNext(next);
  return safe ? `${path}?next=${encodeURIComponent(safe)}` : path;
}

/** Pages behind sign-in: a visitor goes to the sign-in page and comes back. */
export function requireUser(ctx: Context): ConsoleUser {
  const user = consoleState(ctx).user;
  if (!user) {
    ctx.redirect(`/console/sign-in?next=${encodeURIComponent(ctx.originalUrl)}`);
    throw new RedirectDone();
  }
  return user;
}

/** Pages about an organisation's things need one. */
export function requireOrg(ctx: Context): { user: ConsoleUser; org: Membership } {
  const user = requireUser(ctx);
  if (!user.org) {
    ctx.redirect('/console/overview');
    throw new RedirectDone();
  }
  return { user, org: user.org };
}

/** The signed-in person as the principal of the operations they call, in the organisation their session chose. */
export function personOf(user: ConsoleUser): Principal & { via: 'person' } {
  return { via: 'person', person: user.session.person, orgId: user.org?.orgId ?? null, role: user.org?.role ?? null, ip: user.ip };
}

/** Thrown after a redirect is set, to stop the handler; the console's error handler lets it pass. */
export class RedirectDone extends Error {}

export async function endSession(deps: StoreDeps, ctx: Context, secure: boolean): Promise<void> {
  const user = consoleState(ctx).user;
  if (user) await closeSession(deps, user.session.tokenHash);
  ctx.cookies.set(SESSION_COOKIE, null, cookieOptions(secure));
}
