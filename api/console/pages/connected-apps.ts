import type Router from '@koa/router';
import type { RouteDeps } from '../../http/context';
import { connectedApps, revokeApp } from '../../../operations/oauth-grants';
import { when } from '../format';
import { html } from '../../http/html';
import { csrfField, page } from '../layout';
import { personOf, refusingPlainly, requireUser } from '../session';

/**
 * The apps a person allowed to act for them (DESIGN §15), one row per grant: which organisation, what it may do, and
 * a button that ends the grant and every token issued under it at once.
 */
export function connectedAppPages(router: Router, deps: RouteDeps): void {
  router.get('/apps', async (ctx) => {
    const user = requireUser(ctx);
    const apps = await connectedApps(deps, personOf(user));
    const orgName = (orgId: string): string => user.memberships.find((m) => m.orgId === orgId)?.orgName ?? orgId;
    const body =
      apps.length === 0
        ? html`<p>No app acts for you. An app that signs in with Quorum (an MCP client, say) asks for your consent and then shows here.</p>`
        : html`<table>
            <thead>
              <tr>
                <th>App</th>
                <th>Organisation</th>
                <th>May</th>
                <th>Allowed</th>
                <th><span class="visually-hidden">Revoke</span></th>
              </tr>
            </thead>
            <tbody>
              ${apps.map(
                (a) =>
                  html`<tr>
                    <td>${a.appName}</td>
                    <td>${orgName(a.orgId)}</td>
                    <td>
                      ${Object.entries(a.resources).map(
                        ([resource, scopes]) => html`<div><code>${new URL(resource).pathname}</code>: ${scopes.join(', ')}</div>`,
                      )}
                    </td>
                    <td>${when(a.grantedAt)}</td>
                    <td>
                      <form method="post" action="/console/apps/${a.grantId}/revoke" class="inline">
                        ${csrfField(ctx)}<button class="secondary" aria-label="Revoke ${a.appName}">Revoke</button>
                      </form>
                    </td>
                  </tr>`,
              )}
            </tbody>
          </table>`;
    page(ctx, 'Connected apps', body, { flash: ctx.query.revoked ? 'Revoked: the app’s tokens no longer work.' : undefined });
  });

  router.post('/apps/:grantId/revoke', async (ctx) => {
    const user = requireUser(ctx);
    await refusingPlainly(revokeApp(deps, personOf(user), ctx.params.grantId));
    ctx.status = 303;
    ctx.redirect('/console/apps?revoked=1');
  });
}
