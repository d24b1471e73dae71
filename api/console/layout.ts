import type { Context } from 'koa';
import { html, type Html } from '../http/html';
import { consoleState, withNext } from './session';

/** The console's page shell: navigation by what the person can see, accessible landmarks, no external assets. */

const NAV: readonly [string, string][] = [
  ['/console/overview', 'Overview'],
  ['/console/keys', 'API keys'],
  ['/console/modes', 'Modes'],
  ['/console/runs', 'Runs'],
  ['/console/receipts', 'Receipts'],
  ['/console/team', 'Team'],
  ['/console/provider-keys', 'Provider keys'],
  ['/console/activity', 'Activity'],
  ['/console/alerts', 'Alerts'],
  ['/console/apps', 'Connected apps'],
];

export function csrfField(ctx: Context): Html {
  return html`<input type="hidden" name="_csrf" value="${consoleState(ctx).csrf}" />`;
}

export function page(ctx: Context, title: string, body: Html, opts: { flash?: string; error?: string } = {}): void {
  const { user, csrf } = consoleState(ctx);
  // A visitor on the way somewhere (an app's authorization request) keeps going there whichever way they sign in.
  const next = user ? undefined : (ctx.query.next ?? (ctx.request.body as { next?: unknown } | undefined)?.next);
  const nav = user
    ? html`<nav aria-label="Console">
          ${NAV.map(([href, label]) => html`<a href="${href}" ${ctx.path.startsWith(href) ? html`aria-current="page"` : ''}>${label}</a>`)}
        </nav>
        <div class="who">
          ${
            user.memberships.length > 1
              ? html`<form method="post" action="/console/org" class="inline">
                  ${csrfField(ctx)}<label class="inline"
                    ><span class="muted">Organisation</span>
                    <select name="org_id">
                      ${user.memberships.map(
                        (m) => html`<option value="${m.orgId}" ${m.orgId === user.org?.orgId ? html`selected` : ''}>${m.orgName}</option>`,
                      )}
                    </select></label
                  ><button class="secondary">Switch</button>
                </form>`
              : html`<span class="muted">${user.org?.orgName ?? ''}</span>`
          }
          <span>${user.session.person.email}</span>
          <form method="post" action="/console/sign-out" class="inline">${csrfField(ctx)}<button class="secondary">Sign out</button></form>
        </div>`
    : html`<div class="who">
        <a href="${withNext('/console/sign-in', next)}">Sign in</a><a href="${withNext('/console/sign-up', next)}">Sign up</a>
      </div>`;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="htmx-config" content='{"includeIndicatorStyles":false,"allowEval":false}' />
        <title>${title} · Quorum console</title>
        <link rel="stylesheet" href="/console/assets/console.css" />
        <script src="/console/assets/htmx.min.js" defer></script>
        <script src="/console/assets/console.js" defer></script>
      </head>
      <body hx-headers='{"x-csrf-token":"${csrf}"}'>
        <a href="#main" class="skip">Skip to content</a>
        <header class="top"><span class="brand">Quorum</span>${nav}</header>
        <main id="main">
          <h1>${title}</h1>
          ${opts.flash ? html`<p class="flash" role="status">${opts.flash}</p>` : ''}
          ${opts.error ? html`<p class="flash error" role="alert">${opts.error}</p>` : ''} ${body}
        </main>
      </body>
    </html>`.value;
}
