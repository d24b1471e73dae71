import type Router from '@koa/router';
import type { RouteDeps } from '../../http/context';
import type { Context } from 'koa';
import { nameProblems, normaliseEmail, passwordProblems, PASSWORD_LIMITS } from '../../../domain/people';
import { invitationOf, joinByInvitation, signIn, signUp } from '../../../operations/people';
import { chooseOrganisation, closeEverySession, openSession } from '../../../operations/sessions';
import { fieldsOf, text } from '../fields';
import { html, type Html } from '../../http/html';
import { csrfField, page } from '../layout';
import {
  ConsoleRefusal,
  consoleNext,
  consoleState,
  cookieOptions,
  endSession,
  personOf,
  refusingPlainly,
  requireUser,
  SESSION_COOKIE,
  withNext,
} from '../session';

/** Sign-up, sign-in (rate limited, rotating the session), sign-out (here or everywhere), invitations, switching organisation. */

type Problems = Partial<Record<'name' | 'email' | 'password' | 'org', string[]>>;

function problemsOf(field: keyof Problems, problems: Problems): Html {
  const list = problems[field];
  return list?.length ? html`<span class="refusal" id="${field}-problems">${list.join(' ')}</span>` : html``;
}

function field(opts: {
  name: keyof Problems;
  label: string;
  type?: string;
  value?: string;
  hint?: string;
  problems: Problems;
  autocomplete: string;
}): Html {
  const bad = (opts.problems[opts.name]?.length ?? 0) > 0;
  return html`<label
    >${opts.label} ${opts.hint ? html`<span class="hint">${opts.hint}</span>` : ''}
    <input
      name="${opts.name}"
      type="${opts.type ?? 'text'}"
      value="${opts.value ?? ''}"
      autocomplete="${opts.autocomplete}"
      required
      ${bad ? html`aria-invalid="true" aria-describedby="${opts.name}-problems"` : ''}
    />
    ${problemsOf(opts.name, opts.problems)}</label
  >`;
}

/** Invitation links carry their token in the query, which the access log never records. */
export function inviteUrl(token: string): string {
  return `/console/invite?token=${encodeURIComponent(token)}`;
}

function signUpPage(
  ctx: Context,
  values: { name?: string; email?: string; org?: string; invite?: string; next?: string },
  problems: Problems,
  error?: string,
): void {
  const invited = Boolean(values.invite);
  page(
    ctx,
    'Create your account',
    html`<form method="post" action="/console/sign-up" class="stack">
        ${csrfField(ctx)} ${invited ? html`<input type="hidden" name="invite" value="${values.invite}" />` : ''}
        ${consoleNext(values.next) ? html`<input type="hidden" name="next" value="${consoleNext(values.next)}" />` : ''}
        ${field({ name: 'name', label: 'Your name', value: values.name, problems, autocomplete: 'name' })}
        ${field({ name: 'email', label: 'Email', type: 'email', value: values.email, problems, autocomplete: 'email' })}
        ${field({
          name: 'password',
          label: 'Password',
          type: 'password',
          hint: `at least ${PASSWORD_LIMITS.min} characters`,
          problems,
          autocomplete: 'new-password',
        })}
        ${
          invited
            ? html`<p class="muted">You will join the organisation that invited you.</p>`
            : field({
                name: 'org',
                label: 'Organisation',
                hint: 'your team or company; it starts with a $5 trial credit',
                value: values.org,
                problems,
                autocomplete: 'organization',
              })
        }
        <button>Create account</button>
      </form>
      <p>Have an account? <a href="${withNext('/console/sign-in', values.next)}">Sign in</a>.</p>`,
    { error },
  );
}

function signInPage(ctx: Context, values: { email?: string; next?: string }, error?: string): void {
  page(
    ctx,
    'Sign in',
    html`<form method="post" action="/console/sign-in" class="stack">
        ${csrfField(ctx)}<input type="hidden" name="next" value="${values.next ?? ''}" />
        ${field({ name: 'email', label: 'Email', type: 'email', value: values.email, problems: {}, autocomplete: 'username' })}
        ${field({ name: 'password', label: 'Password', type: 'password', problems: {}, autocomplete: 'current-password' })}
        <button>Sign in</button>
      </form>
      <p>New here? <a href="${withNext('/console/sign-up', values.next)}">Create an account</a>.</p>`,
    { error },
  );
}

/** A new session for the person, replacing any the browser had (session fixation). */
async function startSession(deps: RouteDeps, ctx: Context, personId: string, orgId: string | null): Promise<void> {
  await endSession(deps, ctx, deps.secureCookies);
  const { token } = await openSession(deps, personId, orgId);
  ctx.cookies.set(SESSION_COOKIE, token, cookieOptions(deps.secureCookies));
}

export function authPages(router: Router, deps: RouteDeps): void {
  router.get('/', (ctx) => ctx.redirect(consoleState(ctx).user ? '/console/overview' : '/console/sign-in'));

  router.get('/sign-up', (ctx) =>
    signUpPage(
      ctx,
      {
        invite: typeof ctx.query.invite === 'string' ? ctx.query.invite : undefined,
        next: typeof ctx.query.next === 'string' ? ctx.query.next : undefined,
      },
      {},
    ),
  );
  router.post('/sign-up', async (ctx) => {
    const form = fieldsOf(ctx, {
      name: text(200),
      email: text(400),
      password: text(PASSWORD_LIMITS.max * 4),
      org: text(200),
      invite: text(200),
      next: text(2_000),
    });
    const email = normaliseEmail(form.email);
    const problems: Problems = {
      name: nameProblems(form.name),
      email: email ? [] : ['Enter an email address like name@example.com.'],
      password: passwordProblems(form.password, form.email),
      org: form.invite ? [] : nameProblems(form.org),
    };
    if (Object.values(problems).some((p) => p.length > 0) || !email) {
      ctx.status = 400;
      return signUpPage(ctx, form, problems, 'Some fields need attention.');
    }
    const created = await signUp(deps, {
      email,
      name: form.name.trim(),
      password: form.password,
      orgName: form.invite ? undefined : form.org.trim(),
    });
    if (!created) {
      ctx.status = 409;
      return signUpPage(ctx, form, { email: ['An account with this address exists: sign in instead.'] }, 'Some fields need attention.');
    }
    await startSession(deps, ctx, created.person.id, created.org?.orgId ?? null);
    // An invitation is accepted first; a sign-up begun elsewhere (an app's authorization request) goes back there.
    ctx.redirect(form.invite ? inviteUrl(form.invite) : (consoleNext(form.next) ?? '/console/keys?welcome=1'));
  });

  router.get('/sign-in', (ctx) => signInPage(ctx, { next: typeof ctx.query.next === 'string' ? ctx.query.next : undefined }));
  router.post('/sign-in', async (ctx) => {
    const form = fieldsOf(ctx, { email: text(400), password: text(PASSWORD_LIMITS.max * 4), next: text(2_000) });
    const email = normaliseEmail(form.email) ?? form.email.trim().toLowerCase().slice(0, 320);
    const outcome = await signIn(deps, { email, password: form.password, ip: ctx.ip });
    if (outcome.outcome === 'throttled') {
      ctx.status = 429;
      ctx.set('Retry-After', String(outcome.retryAfterSeconds));
      const minutes = Math.ceil(outcome.retryAfterSeconds / 60);
      return signInPage(
        ctx,
        { email, next: form.next },
        `Too many failed sign-ins for this address. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`,
      );
    }
    if (outcome.outcome === 'refused') {
      ctx.status = 401;
      return signInPage(ctx, { email, next: form.next }, 'That email and password do not match an account.');
    }
    await startSession(deps, ctx, outcome.person.id, null);
    ctx.redirect(consoleNext(form.next) ?? '/console/overview');
  });

  router.post('/sign-out', async (ctx) => {
    await endSession(deps, ctx, deps.secureCookies);
    ctx.redirect('/console/sign-in');
  });
  router.post('/sign-out-everywhere', async (ctx) => {
    const user = requireUser(ctx);
    await closeEverySession(deps, personOf(user));
    ctx.cookies.set(SESSION_COOKIE, null, cookieOptions(deps.secureCookies));
    ctx.redirect('/console/sign-in');
  });

  router.post('/org', async (ctx) => {
    const user = requireUser(ctx);
    const { org_id } = fieldsOf(ctx, { org_id: text(100) });
    await refusingPlainly(chooseOrganisation(deps, personOf(user), user.session, org_id));
    ctx.redirect('/console/overview');
  });

  router.get('/invite', async (ctx) => {
    const token = typeof ctx.query.token === 'string' ? ctx.query.token : '';
    const invitation = await invitationOf(deps, token);
    const user = consoleState(ctx).user;
    if (!invitation || invitation.acceptedAt || invitation.expiresAt < new Date())
      throw new ConsoleRefusal(404, 'This invitation is not valid: it was used, it expired, or the link is incomplete.');
    page(
      ctx,
      `Join ${invitation.orgName}`,
      user
        ? user.session.person.email.toLowerCase() === invitation.email.toLowerCase()
          ? html`<form method="post" action="/console/invite" class="stack">
              ${csrfField(ctx)}<input type="hidden" name="token" value="${token}" /><button>Join ${invitation.orgName}</button>
            </form>`
          : html`<p class="error-box">This invitation is for ${invitation.email}; you are signed in as ${user.session.person.email}.</p>`
        : html`<p>This invitation is for ${invitation.email}.</p>
            <p>
              <a class="button" href="/console/sign-up?invite=${encodeURIComponent(token)}">Create an account</a>
              or <a href="/console/sign-in?next=${encodeURIComponent(inviteUrl(token))}">sign in</a> to accept it.
            </p>`,
    );
  });
  router.post('/invite', async (ctx) => {
    const user = requireUser(ctx);
    const { token } = fieldsOf(ctx, { token: text(200) });
    await refusingPlainly(joinByInvitation(deps, personOf(user), user.session, token));
    ctx.redirect('/console/overview');
  });
}
