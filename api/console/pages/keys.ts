import type Router from '@koa/router';
import type { Context } from 'koa';
import type { KeyListing } from '../../../db/repositories/api-keys';
import { ORG_REQUESTS_PER_MINUTE, SCOPES } from '../../../domain/api-keys';
import { issueKey, keysOf, revokeKey, setBudget } from '../../../operations/api-keys';
import { parseKeyBudget, parseNewKey } from '../../../operations/requests/organization';
import { signingSecretOf } from '../../../operations/webhook-secrets';
import { baseUrlOf, type RouteDeps } from '../../http/context';
import { html, type Html } from '../../http/html';
import { usd, when } from '../format';
import { csrfField, page } from '../layout';
import { personOf, refusingPlainly, requireOrg } from '../session';
import { copyButton, signingSecretSection } from './account';

/**
 * API keys (issued shown once, given a label, scopes, modes, an expiry, a monthly budget and a requests-per-minute
 * limit; revoked; budget changed) and the webhook signing secret. The form is read into the body of
 * `POST /v1/organization/keys` and goes through the same parser and operation (issue 41 item 3).
 */

const SECONDS_PER_DAY = 86_400;

/** A form field as text; absent or blank is undefined. */
function field(body: Record<string, unknown>, name: string): string | undefined {
  const v = body[name];
  return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
}

/** A number field as the API's body has it: text that is no number is passed on as text, so the parser names it. */
function numberField(body: Record<string, unknown>, name: string): number | string | undefined {
  const v = field(body, name);
  return v === undefined || !Number.isFinite(Number(v)) ? v : Number(v);
}

/** The key form as the API's body: the same schema then reads it, and refuses what it refuses, naming the field. */
export function keyFormBody(body: Record<string, unknown>, nowMs: number): Record<string, unknown> {
  const raw = body.scopes;
  const days = numberField(body, 'expires_in_days');
  const modes = field(body, 'modes');
  const kind = field(body, 'kind') ?? 'live';
  return {
    kind,
    ...(field(body, 'label') !== undefined && { label: field(body, 'label') }),
    // An admin key has no calling scope: the boxes are not its to tick.
    ...(kind !== 'admin' && { scopes: (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).filter((s) => typeof s === 'string') }),
    ...(days !== undefined && { expires_at: typeof days === 'number' ? Math.floor(nowMs / 1000 + days * SECONDS_PER_DAY) : days }),
    ...(modes !== undefined && { modes: modes.split(/[\s,]+/).filter(Boolean) }),
    ...(numberField(body, 'monthly_budget_usd') !== undefined && { monthly_budget_usd: numberField(body, 'monthly_budget_usd') }),
    ...(numberField(body, 'requests_per_minute') !== undefined && { requests_per_minute: numberField(body, 'requests_per_minute') }),
  };
}

function keyState(k: KeyListing): string {
  if (k.revokedAt) return `revoked ${when(k.revokedAt)}`;
  if (k.expiresAt) return k.expiresAt.getTime() <= Date.now() ? `expired ${when(k.expiresAt)}` : `active until ${when(k.expiresAt)}`;
  return 'active';
}

function keyForm(ctx: Context, owner: boolean): Html {
  return html`<form method="post" action="/console/keys" class="stack">
    ${csrfField(ctx)}
    <label>Label <input name="label" maxlength="100" autocomplete="off" /></label>
    <fieldset>
      <legend>Kind</legend>
      <label
        ><span><input type="radio" name="kind" value="live" checked /> Live: real engines, billed</span></label
      >
      <label
        ><span><input type="radio" name="kind" value="test" /> Test: simulated engines, never billed</span></label
      >
      ${
        owner
          ? html`<label
              ><span
                ><input type="radio" name="kind" value="admin" /> Admin: manages keys and reads the activity log over
                <code>/v1/organization</code>; calls no mode</span
              ></label
            >`
          : ''
      }
    </fieldset>
    <fieldset>
      <legend>Scopes</legend>
      ${SCOPES.map(
        (s) =>
          html`<label
            ><span><input type="checkbox" name="scopes" value="${s}" checked /> ${s}</span></label
          >`,
      )}
    </fieldset>
    <label
      >Modes <span class="hint">ids or tickers separated by commas; empty: every mode</span> <input name="modes" autocomplete="off"
    /></label>
    <label>Expires in days <span class="hint">empty: never</span> <input name="expires_in_days" type="number" min="1" step="1" /></label>
    <label
      >Monthly budget in USD <span class="hint">a live call that would pass it is refused before it runs</span>
      <input name="monthly_budget_usd" type="number" min="0.000001" step="any"
    /></label>
    <label
      >Requests per minute <span class="hint">below the organisation's ${ORG_REQUESTS_PER_MINUTE}; empty: the organisation's</span>
      <input name="requests_per_minute" type="number" min="1" max="${ORG_REQUESTS_PER_MINUTE - 1}" step="1"
    /></label>
    <button>Create key</button>
  </form>`;
}

function keyRow(ctx: Context, k: KeyListing): Html {
  const live = !k.revokedAt;
  return html`<tr id="key-${k.id}">
    <td><code>${k.display}</code>${k.label ? html`<br />${k.label}` : ''}</td>
    <td>${k.keyKind}</td>
    <td>${k.keyKind === 'admin' ? 'organisation' : k.scopes.join(', ')}</td>
    <td>${k.keyKind === 'admin' ? 'none' : k.allowedModes ? k.allowedModes.join(', ') : 'every mode'}</td>
    <td class="num">${k.requestsPerMinute ?? ORG_REQUESTS_PER_MINUTE}</td>
    <td>
      ${k.monthlyBudgetMicros === null ? 'none' : usd(k.monthlyBudgetMicros)}
      ${
        live && k.keyKind !== 'admin'
          ? html`<form method="post" action="/console/keys/${k.id}/budget" class="inline">
              ${csrfField(ctx)}<input
                name="monthly_budget_usd"
                type="number"
                min="0.000001"
                step="any"
                aria-label="Monthly budget in USD"
              /><button class="secondary">Set</button>
            </form>`
          : ''
      }
    </td>
    <td>${when(k.createdAt)}</td>
    <td>${keyState(k)}</td>
    <td>
      ${
        live
          ? html`<form method="post" action="/console/keys/${k.id}/revoke" class="inline">
              ${csrfField(ctx)}<button class="danger">Revoke</button>
            </form>`
          : ''
      }
    </td>
  </tr>`;
}

/** The page shown once after a key is made: its secret and how to call with it. */
function newKeyPage(ctx: Context, apiKey: string, admin: boolean): void {
  const base = `${baseUrlOf(ctx)}/v1`;
  // Shown once: this response is the only place the key exists in the clear; it is not cached.
  ctx.set('Cache-Control', 'no-store');
  const snippets = admin
    ? html`<h2>Manage keys with it</h2>
        <pre id="snippet-curl">curl ${base}/organization/keys -H "Authorization: Bearer ${apiKey}"</pre>
        ${copyButton('snippet-curl')}`
    : html`<h2>Call it with the OpenAI SDKs</h2>
        <p>Change the base URL and the model; nothing else.</p>
        <pre id="snippet-py">
from openai import OpenAI
client = OpenAI(base_url="${base}", api_key="${apiKey}")
reply = client.chat.completions.create(model="QRM:PANL", messages=[{"role": "user", "content": "Why is the sky blue?"}])
print(reply.choices[0].message.content)</pre>
        ${copyButton('snippet-py')}
        <pre id="snippet-js">
import OpenAI from 'openai';
const client = new OpenAI({ baseURL: '${base}', apiKey: '${apiKey}' });
const reply = await client.chat.completions.create({ model: 'QRM:PANL', messages: [{ role: 'user', content: 'Why is the sky blue?' }] });
console.log(reply.choices[0].message.content);</pre>
        ${copyButton('snippet-js')}`;
  page(
    ctx,
    'Your new API key',
    html`<p class="flash" role="status">Copy it now: it is shown once. Only a hash of it is kept.</p>
      <p class="secret" id="new-key">${apiKey}</p>
      ${copyButton('new-key')} ${snippets}
      <p><a href="/console/keys">Back to keys</a></p>`,
  );
}

export function keyPages(router: Router, deps: RouteDeps): void {
  router.get('/keys', async (ctx) => {
    const { user, org } = requireOrg(ctx);
    const [keys, secret] = await Promise.all([keysOf(deps, personOf(user)), signingSecretOf(deps, personOf(user))]);
    page(
      ctx,
      'API keys',
      html`${ctx.query.welcome ? html`<p class="flash">Welcome. Issue a key to call the API; it is shown once.</p>` : ''}
        ${keyForm(ctx, org.role === 'owner')}
        <h2>Keys</h2>
        <table>
          <thead>
            <tr>
              <th>Key</th>
              <th>Kind</th>
              <th>Scopes</th>
              <th>Modes</th>
              <th class="num">Requests a minute</th>
              <th>Monthly budget</th>
              <th>Created</th>
              <th>State</th>
              <th></th>
            </tr>
          </thead>
          <tbody>
            ${keys.map((k) => keyRow(ctx, k))}
          </tbody>
        </table>
        ${signingSecretSection(ctx, secret, org.role === 'owner')}`,
    );
  });

  router.post('/keys', async (ctx) => {
    const { user } = requireOrg(ctx);
    const input = parseNewKey(keyFormBody((ctx.request.body ?? {}) as Record<string, unknown>, Date.now()));
    const { apiKey } = await issueKey(deps, personOf(user), input);
    newKeyPage(ctx, apiKey, input.keyKind === 'admin');
  });

  router.post('/keys/:id/budget', async (ctx) => {
    const { user } = requireOrg(ctx);
    const body = (ctx.request.body ?? {}) as Record<string, unknown>;
    const budget = parseKeyBudget({ monthly_budget_usd: numberField(body, 'monthly_budget_usd') ?? null });
    await refusingPlainly(setBudget(deps, personOf(user), ctx.params.id, budget));
    ctx.redirect('/console/keys');
  });

  router.post('/keys/:id/revoke', async (ctx) => {
    const { user } = requireOrg(ctx);
    await refusingPlainly(revokeKey(deps, personOf(user), ctx.params.id));
    ctx.redirect('/console/keys');
  });
}
