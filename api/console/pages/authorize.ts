import type Router from '@koa/router';
import type { RouteDeps } from '../../http/context';
import type { Context } from 'koa';
import { errors as oidcErrors } from 'oidc-provider';
import { z } from 'zod';
import { ownPlan } from '../../../operations/plans';
import { microsToDecimal } from '../../../domain/money';
import { accountIdOf, OAUTH_SCOPES } from '../../../domain/plans';
import { fieldsOf } from '../fields';
import { html } from '../../http/html';
import { csrfField, page } from '../layout';
import { ConsoleRefusal, personOf, requireUser } from '../session';

/**
 * Sign-in and consent for connected apps (DESIGN §15): the authorization server sends the person here, the console's
 * own sign-in (and its session) establishes who they are, and they choose the organisation the app acts in and allow
 * or deny it. The answer goes back to the authorization server, which redirects to the app.
 */

const SCOPE_WORDS: Readonly<Record<(typeof OAUTH_SCOPES)[number], string>> = {
  completions: 'Ask questions that run a deliberation, billed to your plan',
  estimate: 'Estimate what a question would cost (free)',
  models: 'See the modes your plan allows',
  receipts: 'Read the receipts of your calls',
  tests: 'Launch test runs of your organisation’s modes, billed to your plan at real engine cost, 25% off per question',
  certify: 'Certify your organisation’s modes, billed to your plan at real engine cost (never more than $50)',
};

type Details = Awaited<ReturnType<Awaited<ReturnType<RouteDeps['oauth']['provider']>>['interactionDetails']>>;

async function interaction(deps: RouteDeps, ctx: Context): Promise<Details> {
  const provider = await deps.oauth.provider();
  try {
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    if (details.uid !== ctx.params.uid) throw new oidcErrors.SessionNotFound('interaction mismatch');
    return details;
  } catch (err) {
    if (err instanceof oidcErrors.SessionNotFound)
      throw new ConsoleRefusal(400, 'This sign-in request has expired or belongs to another browser. Start again from the app.');
    throw err;
  }
}

/**
 * Resource → the scopes the app asks for there, read from the authorization request itself: the prompt's own list of
 * missing scopes exists only when consent is the prompt, and a first sign-in is a login prompt.
 */
function requested(deps: RouteDeps, details: Details): Record<string, string[]> {
  const scopes = String(details.params.scope ?? '')
    .split(' ')
    .filter((s) => (OAUTH_SCOPES as readonly string[]).includes(s));
  const asked = details.params.resource;
  const resources = (Array.isArray(asked) ? asked : asked ? [asked] : [deps.oauth.resource('mcp')]).map(String);
  return Object.fromEntries(resources.map((r) => [r, scopes]));
}

/** Where the answer goes: shown to the person (a look-alike app is told apart by where it sends them). */
function redirectOrigin(redirectUri: string): string | undefined {
  return URL.canParse(redirectUri) ? new URL(redirectUri).origin : undefined;
}

/**
 * The console's CSP allows forms to post only to itself, and browsers apply `form-action` to every redirect the post
 * leads to: the answer's last redirect goes to the app, so this page's policy names the app's redirect origin too.
 */
function allowRedirectTo(ctx: Context, redirectUri: string): void {
  const csp = ctx.response.get('Content-Security-Policy');
  const origin = redirectOrigin(redirectUri);
  if (!csp || !origin || origin === 'null') return;
  ctx.set('Content-Security-Policy', csp.replace(/form-action 'self'/, `form-action 'self' ${origin}`));
}

export function authorizePages(router: Router, deps: RouteDeps): void {
  router.get('/authorize/:uid', async (ctx) => {
    const user = requireUser(ctx);
    const details = await interaction(deps, ctx);
    const provider = await deps.oauth.provider();
    const client = await provider.Client.find(String(details.params.client_id));
    const appName = client?.clientName ?? String(details.params.client_id);
    const scopes = [...new Set(Object.values(requested(deps, details)).flat())];
    const plan = await ownPlan(deps, personOf(user));
    const body =
      user.memberships.length === 0
        ? html`<p>
            You need an organisation before an app can act for you. <a href="/console/overview">Create one</a>, then start again from the
            app.
          </p>`
        : html`<p><strong>${appName}</strong> wants to act for you, <strong>${user.session.person.email}</strong>, in Quorum.</p>
            ${
              scopes.length > 0
                ? html`<p>It asks to:</p>
                    <ul>
                      ${scopes.map((s) => html`<li>${SCOPE_WORDS[s as keyof typeof SCOPE_WORDS] ?? s} <code>${s}</code></li>`)}
                    </ul>`
                : ''
            }
            <p>
              Its calls bill your plan, <strong>${plan.name}</strong>: real engine cost only, up to
              ${microsToDecimal(BigInt(plan.monthlyAllowanceMicros))} USD a month, ${plan.maxInFlight} at a time, tiers
              ${plan.tiers.join(', ')}.
            </p>
            <p class="muted">After you answer, you go back to <code>${redirectOrigin(String(details.params.redirect_uri))}</code>.</p>
            <form method="post" action="/console/authorize/${details.uid}">
              ${csrfField(ctx)}
              <label
                >Organisation
                <select name="org_id">
                  ${user.memberships.map(
                    (m) => html`<option value="${m.orgId}" ${m.orgId === user.org?.orgId ? html`selected` : ''}>${m.orgName}</option>`,
                  )}
                </select></label
              >
              <p class="actions">
                <button name="decision" value="allow">Allow</button>
                <button name="decision" value="deny" class="secondary">Deny</button>
              </p>
            </form>`;
    allowRedirectTo(ctx, String(details.params.redirect_uri));
    page(ctx, `Allow ${appName}?`, body);
  });

  router.post('/authorize/:uid', async (ctx) => {
    const user = requireUser(ctx);
    const details = await interaction(deps, ctx);
    const provider = await deps.oauth.provider();
    const form = fieldsOf(ctx, { decision: z.enum(['allow', 'deny']), org_id: z.string().max(100).default('') });
    let result;
    if (form.decision === 'deny') {
      result = { error: 'access_denied', error_description: 'The person declined to allow this app.' };
    } else {
      const org = user.memberships.find((m) => m.orgId === form.org_id);
      if (!org) throw new ConsoleRefusal(403, 'You are not a member of that organisation.');
      const accountId = accountIdOf(user.session.person.id, org.orgId);
      const clientId = String(details.params.client_id);
      // A grant of another account (the person chose another organisation before) is not extended: a new one is made.
      const existing = details.grantId ? await provider.Grant.find(details.grantId) : undefined;
      const grant = existing?.accountId === accountId ? existing : new provider.Grant({ accountId, clientId });
      // Granted both as the server's scopes (so the consent prompt is satisfied) and per resource (so tokens carry them).
      for (const [resource, scopes] of Object.entries(requested(deps, details))) {
        grant.addOIDCScope(scopes.join(' '));
        grant.addResourceScope(resource, scopes.join(' '));
      }
      result = { login: { accountId }, consent: { grantId: await grant.save() } };
    }
    const returnTo = await provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission: false });
    ctx.status = 303;
    ctx.redirect(returnTo);
  });
}
