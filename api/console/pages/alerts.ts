import type Router from '@koa/router';
import type { RouteDeps } from '../../http/context';
import { accountEventsOf, accountSettingsOf, changeAccountSettings } from '../../../operations/account-settings';
import { DEFAULT_RETENTION_DAYS, MAX_RETENTION_DAYS } from '../../../domain/retention';
import { microsToDecimal } from '../../../domain/money';
import { when } from '../format';
import { fieldsOf, text } from '../fields';
import { html } from '../../http/html';
import { csrfField, page } from '../layout';
import { ConsoleRefusal, personOf, refusingPlainly, requireOrg } from '../session';

/**
 * Alerts and retention (issue 41 items 4 and 5): the owner sets the webhook URL account events go to, the
 * `balance.low` threshold and the transcript retention; everyone sees the recent account events and their delivery.
 */
export function alertPages(router: Router, deps: RouteDeps): void {
  router.get('/alerts', async (ctx) => {
    const { user, org } = requireOrg(ctx);
    const [settings, events] = await Promise.all([accountSettingsOf(deps, personOf(user)), accountEventsOf(deps, personOf(user))]);
    const owner = org.role === 'owner';
    page(
      ctx,
      'Alerts and retention',
      html`<p>
          Account events (<code>balance.low</code>, <code>trial.expiring</code>, <code>key.budget_reached</code>, <code>key.expiring</code>)
          are POSTed to the webhook URL, signed as run callbacks are (<code>Quorum-Signature</code>, the secret on the API keys page), each
          once with its own <code>Quorum-Event-Id</code>, retried with the same id until the receiver answers 2xx.
        </p>
        <form method="post" action="/console/alerts" class="stack">
          ${csrfField(ctx)}
          <label
            >Webhook URL
            <input name="webhook_url" type="url" value="${settings.webhookUrl ?? ''}" ${owner ? '' : 'disabled'} autocomplete="off"
          /></label>
          <label
            >Alert when the balance falls below (USD; 0: never)
            <input name="balance_low_usd" value="${microsToDecimal(settings.lowBalanceMicros)}" ${owner ? '' : 'disabled'} required
          /></label>
          <label
            >Keep transcripts for (days; 0: never stored past the call; empty: the default, ${DEFAULT_RETENTION_DAYS})
            <input
              name="transcript_retention_days"
              type="number"
              min="0"
              max="${MAX_RETENTION_DAYS}"
              value="${settings.retentionDays ?? ''}"
              ${owner ? '' : 'disabled'}
          /></label>
          <p class="muted" id="retention-now">Transcripts are kept ${settings.effectiveRetentionDays} day(s).</p>
          ${owner ? html`<button>Save</button>` : html`<p class="muted">Only the owner changes these.</p>`}
        </form>
        <h2>Recent account events</h2>
        <table id="account-events">
          <thead>
            <tr>
              <th>When</th>
              <th>Event</th>
              <th>Id</th>
              <th>Delivery</th>
              <th class="num">Attempts</th>
              <th>Last answer</th>
            </tr>
          </thead>
          <tbody>
            ${events.map(
              (e) =>
                html`<tr data-event="${e.id}">
                  <td>${when(e.createdAt)}</td>
                  <td>${e.type}</td>
                  <td><code>${e.id}</code></td>
                  <td class="delivery">${e.state.replace('_', ' ')}</td>
                  <td class="num">${e.attempts}</td>
                  <td>${e.lastStatus ?? ''} ${e.lastError ?? ''}</td>
                </tr>`,
            )}
          </tbody>
        </table>`,
    );
  });

  router.post('/alerts', async (ctx) => {
    const { user } = requireOrg(ctx);
    const form = fieldsOf(ctx, { webhook_url: text(2048), balance_low_usd: text(20), transcript_retention_days: text(10) });
    const days = form.transcript_retention_days.trim();
    if (days !== '' && !/^\d+$/.test(days)) throw new ConsoleRefusal(400, 'Transcript retention is a whole number of days.');
    await refusingPlainly(
      changeAccountSettings({ ...deps, publicCallbacksOnly: deps.runs.publicCallbacksOnly }, personOf(user), {
        webhookUrl: form.webhook_url,
        lowBalanceUsd: form.balance_low_usd,
        retentionDays: days === '' ? null : Number(days),
      }),
    );
    ctx.redirect('/console/alerts');
  });
}
