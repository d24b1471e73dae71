import type Router from '@koa/router';
import type { RouteDeps } from '../../http/context';
import { ACTIVITY_KINDS } from '../../../domain/activity';
import { activityOf, parseActivityQuery } from '../../../operations/activity';
import { html } from '../../http/html';
import { when } from '../format';
import { page } from '../layout';
import { personOf, refusingPlainly, requireOrg } from '../session';

/**
 * The organisation's activity log (issue 41 item 6): every change to the account, who made it, from where and what
 * changed, newest first, filtered by kind; the same operation and query as `GET /v1/organization/activity`.
 */
export function activityPages(router: Router, deps: RouteDeps): void {
  router.get('/activity', async (ctx) => {
    const { user } = requireOrg(ctx);
    // The form's "every kind" sends an empty kind: no filter.
    const raw = { ...ctx.query };
    if (raw.kind === '') delete raw.kind;
    const query = await refusingPlainly(Promise.resolve().then(() => parseActivityQuery(raw)));
    const { records, hasMore } = await activityOf(deps, personOf(user), query);
    const kind = typeof ctx.query.kind === 'string' ? ctx.query.kind : '';
    const last = records.at(-1);
    page(
      ctx,
      'Activity',
      html`<form method="get" action="/console/activity" class="inline">
          <label class="inline"
            >Kind
            <select name="kind">
              <option value="">every kind</option>
              ${ACTIVITY_KINDS.map((k) => html`<option ${k === kind ? html`selected` : ''}>${k}</option>`)}
            </select></label
          >
          <button class="secondary">Show</button>
        </form>
        <table id="activity">
          <thead>
            <tr>
              <th>When</th>
              <th>Change</th>
              <th>Who</th>
              <th>From</th>
              <th>About</th>
              <th>What changed</th>
            </tr>
          </thead>
          <tbody>
            ${records.map(
              (r) =>
                html`<tr>
                  <td>${when(r.at)}</td>
                  <td><code>${r.kind}</code></td>
                  <td>${r.actor.kind === 'operator' ? 'operator' : html`${r.actor.kind} <code>${r.actor.id ?? ''}</code>`}</td>
                  <td>${r.actor.edge}${r.actor.ip ? html` (${r.actor.ip})` : ''}</td>
                  <td>${r.subject ?? ''}</td>
                  <td>
                    ${Object.entries(r.detail).map(([k, v]) => html`<div><span class="muted">${k}</span> <code>${JSON.stringify(v)}</code></div>`)}
                  </td>
                </tr>`,
            )}
          </tbody>
        </table>
        ${records.length === 0 ? html`<p class="muted">Nothing recorded yet.</p>` : ''}
        ${
          hasMore && last
            ? html`<p><a href="/console/activity?after=${last.id}${kind ? `&kind=${encodeURIComponent(kind)}` : ''}">Older</a></p>`
            : ''
        }`,
    );
  });
}
