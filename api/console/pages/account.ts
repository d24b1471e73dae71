import { baseUrlOf, type RouteDeps } from '../../http/context';
import type Router from '@koa/router';
import type { Context } from 'koa';
import type { PlanUsage } from '../../../db/repositories/plans';
import type { SigningSecretState } from '../../../db/repositories/webhook-secrets';
import { accountOverview, addBalance, type AccountBalance } from '../../../operations/ledger';
import { invite, removeMember, teamOf } from '../../../operations/people';
import {
  KEY_FAMILIES,
  ownProviderKeysOf,
  removeOwnProviderKey,
  setOwnBedrockRole,
  setOwnProviderKey,
} from '../../../operations/provider-keys';
import { chooseOrganisation } from '../../../operations/sessions';
import { rotateSecret } from '../../../operations/webhook-secrets';
import { QuorumError } from '../../../domain/errors';
import { usdToMicros } from '../../../domain/money';
import { nameProblems } from '../../../domain/people';
import { createOwnOrganisation } from '../../../operations/organisations';
import { usd, when } from '../format';
import { fieldsOf, text } from '../fields';
import { html, type Html } from '../../http/html';
import { csrfField, page } from '../layout';
import { ConsoleRefusal, personOf, refusingPlainly, requireOrg, requireUser } from '../session';
import { inviteUrl } from './auth';

/** The organisation's account: overview (balance, ledger), team and invitations, own provider keys; keys are in keys.ts. */

/** Copies the text of the element named by `data-copy` (no inline script: the CSP allows only our own files). */
export function copyButton(target: string): Html {
  return html`<button type="button" class="secondary" data-copy="${target}">Copy</button>`;
}

/**
 * The signed-in person's plan (what connected apps acting for them may use, DESIGN §15) and this month's use of its
 * allowance, as a bar like a run's progress.
 */
function planSection(u: PlanUsage): Html {
  const allowance = BigInt(u.plan.monthlyAllowanceMicros);
  const used = u.chargedMicros + u.heldMicros;
  const modes = u.plan.modes === null ? 'every mode of the organisation' : u.plan.modes.join(', ');
  return html`<h2>Your plan</h2>
    <p>
      Connected apps you sign in to act for you on the <strong id="plan-name">${u.plan.name}</strong> plan: tiers
      ${u.plan.tiers.join(', ')}; ${modes}; ${u.plan.maxInFlight} deliberation(s) at a time. They pay the engines' real cost from its
      monthly allowance, not from the organisation's balance: calls, and test runs and certifications of the organisation's modes.
    </p>
    <div class="progress-row" id="plan-usage" data-used="${used.toString()}" data-allowance="${allowance.toString()}">
      <span class="progress-label">${u.period.slice(0, 7)}</span>
      <progress
        max="${allowance.toString()}"
        value="${(used < allowance ? used : allowance).toString()}"
        aria-label="${usd(used)} of ${usd(allowance)} used"
      ></progress>
      <span
        >${usd(u.chargedMicros)} charged over ${u.calls} call(s) and ${u.runs} run(s) (${usd(u.runsMicros)}), ${usd(u.heldMicros)} held,
        ${usd(u.remainingMicros)} left of ${usd(allowance)}</span
      >
    </div>`;
}

/** The secret run completion callbacks are signed with (issue 28 item 6): its state, never its value, and Rotate. */
export function signingSecretSection(ctx: Context, state: SigningSecretState | null, owner: boolean): Html {
  const said = !state
    ? 'None yet: one is made for the first callback delivered, or now.'
    : state.shownAt
      ? `Created ${when(state.createdAt)} and shown once then.`
      : `Made for a callback on ${when(state.createdAt)} and never shown: rotate to get one you can see.`;
  return html`<h2>Webhook signing secret</h2>
    <p>
      A run launched with <code>svc.callback_url</code> POSTs its end there, signed with this secret (<code>Quorum-Signature</code>, as
      Stripe signs webhooks). Rotating shows a new secret once; deliveries from then on are signed with it, and the old one stops verifying.
    </p>
    <p id="webhook-secret-state">${said}</p>
    ${
      owner
        ? html`<form method="post" action="/console/webhook-secret" class="inline">
            ${csrfField(ctx)}<button class="secondary">${state ? 'Rotate secret' : 'Create secret'}</button>
          </form>`
        : html`<p class="muted">Only the owner rotates it.</p>`
    }`;
}

/** The trial credit as `GET /v1/balance` reads it (issue 41 item 1): what is unused, and when the rest is deducted. */
function trialCard(trial: AccountBalance['trial']): Html {
  return html`<div class="card">
    <div class="muted">Trial credit unused</div>
    <div class="big" id="trial-unused">${usd(trial.unusedMicros)}</div>
    <div class="muted">
      of ${usd(trial.creditMicros)};
      ${trial.expiredAt ? html`ended ${when(trial.expiredAt)}` : html`the unused part is deducted ${when(trial.endsAt)}`}
    </div>
  </div>`;
}

export function accountPages(router: Router, deps: RouteDeps): void {
  overviewRoutes(router, deps);
  webhookSecretRoutes(router, deps);
  teamRoutes(router, deps);
  providerKeyRoutes(router, deps);
}

/** The overview (balance, ledger, billing plan), creating an organisation, and a development top-up. */
function overviewRoutes(router: Router, deps: RouteDeps): void {
  router.get('/overview', async (ctx) => {
    const user = requireUser(ctx);
    if (!user.org)
      return page(
        ctx,
        'Create an organisation',
        html`<p>You do not belong to an organisation yet. Create one, or ask its owner for an invitation link.</p>
          <form method="post" action="/console/organisations" class="stack">
            ${csrfField(ctx)}<label>Organisation name <input name="name" required autocomplete="organization" /></label
            ><button>Create organisation</button>
          </form>`,
      );
    const { balance, trial, entries: ledger, capCredit, usage } = await accountOverview(deps, personOf(user));
    page(
      ctx,
      user.org.orgName,
      html`<div class="cards">
          <div class="card">
            <div class="muted">Balance</div>
            <div class="big" id="balance">${usd(balance.balanceMicros)}</div>
          </div>
          <div class="card">
            <div class="muted">Reserved by calls in flight</div>
            <div class="big">${usd(balance.reservedMicros)}</div>
          </div>
          <div class="card">
            <div class="muted">Available</div>
            <div class="big">${usd(balance.availableMicros)}</div>
          </div>
          ${trialCard(trial)}
          <div class="card">
            <div class="muted">Cap credit received today (UTC)</div>
            <div class="big" id="cap-credit-today">${usd(capCredit.receivedMicros)}</div>
            <div class="muted">of ${usd(capCredit.limitMicros)} a day</div>
          </div>
          <div class="card">
            <div class="muted">Your role</div>
            <div class="big">${user.org.role}</div>
          </div>
        </div>
        ${planSection(usage)}
        <h2>Add balance</h2>
        ${
          deps.selfTopUp
            ? html`<form method="post" action="/console/top-up" class="stack">
                ${csrfField(ctx)}<label
                  >Amount in USD <span class="hint">development only: no payment is taken</span>
                  <input name="amount_usd" type="number" min="1" max="1000" step="1" value="20" required /></label
                ><button>Add test balance</button>
              </form>`
            : html`<p>
                Balance is added by an operator (<code>quorum balance add --org ${user.org.orgId} --usd N</code>) once payment is received.
              </p>`
        }
        <h2>Ledger</h2>
        <table>
          <thead>
            <tr>
              <th>When</th>
              <th>Kind</th>
              <th class="num">Amount</th>
              <th>Reference</th>
              <th>Note</th>
            </tr>
          </thead>
          <tbody>
            ${ledger.map(
              (e) =>
                html`<tr>
                  <td>${when(e.createdAt)}</td>
                  <td>${e.kind}</td>
                  <td class="num">${usd(e.amountMicros)}</td>
                  <td>
                    ${
                      e.requestId
                        ? e.requestId.startsWith('req_')
                          ? html`<a href="/console/receipts/${e.requestId}">${e.requestId}</a>`
                          : html`<a href="/console/runs/${e.requestId}">${e.requestId}</a>`
                        : ''
                    }
                  </td>
                  <td>${e.note ?? ''}</td>
                </tr>`,
            )}
          </tbody>
        </table>
        <h2>Sessions</h2>
        <form method="post" action="/console/sign-out-everywhere" class="inline">
          ${csrfField(ctx)}<button class="secondary">Sign out everywhere</button>
        </form>`,
    );
  });

  router.post('/organisations', async (ctx) => {
    const user = requireUser(ctx);
    const { name } = fieldsOf(ctx, { name: text(200) });
    const problems = nameProblems(name);
    if (problems.length > 0) throw new ConsoleRefusal(400, `Organisation name: ${problems.join(' ')}`);
    const org = await createOwnOrganisation(deps, personOf(user), name);
    await chooseOrganisation(deps, { ...personOf(user), orgId: org.orgId, role: 'owner' }, user.session, org.orgId);
    ctx.redirect('/console/keys?welcome=1');
  });

  router.post('/top-up', async (ctx) => {
    const { user } = requireOrg(ctx);
    if (!deps.selfTopUp) throw new ConsoleRefusal(403, 'In production an operator adds balance once payment is received.');
    const { amount_usd } = fieldsOf(ctx, { amount_usd: text(20) });
    const amount = Number(amount_usd);
    if (!Number.isInteger(amount) || amount < 1 || amount > 1_000)
      throw new ConsoleRefusal(400, 'Add a whole number of dollars from 1 to 1000.');
    await addBalance(deps, personOf(user), { amountMicros: usdToMicros(amount), note: 'development top-up in the console' });
    ctx.redirect('/console/overview');
  });
}

/** Rotating the webhook signing secret (its state shows on the keys page). */
function webhookSecretRoutes(router: Router, deps: RouteDeps): void {
  router.post('/webhook-secret', async (ctx) => {
    const { user } = requireOrg(ctx);
    const secret = await refusingPlainly(rotateSecret(deps, personOf(user)));
    // Shown once, as a new API key is: this response is the only place it is readable; it is not cached.
    ctx.set('Cache-Control', 'no-store');
    page(
      ctx,
      'Your new webhook signing secret',
      html`<p class="flash" role="status">
          Copy it now: it is shown once. Callbacks from now on are signed with it; the old secret no longer verifies.
        </p>
        <p class="secret" id="new-webhook-secret">${secret}</p>
        ${copyButton('new-webhook-secret')}
        <p><a href="/console/keys">Back to keys</a></p>`,
    );
  });
}

/** The team: members and invitations by link. */
function teamRoutes(router: Router, deps: RouteDeps): void {
  async function teamPage(ctx: Context, link?: string): Promise<void> {
    const { user, org } = requireOrg(ctx);
    const { members, pending: invitations } = await teamOf(deps, personOf(user));
    page(
      ctx,
      'Team',
      html`<p>Members can call the organisation's <code>:LAB</code> drafts and build modes; only the owner sets provider keys.</p>
        <table>
          <thead>
            <tr>
              <th>Name</th>
              <th>Email</th>
              <th>Role</th>
              <th></th>
            </tr>
          </thead>
          <tbody>
            ${members.map(
              (m) =>
                html`<tr>
                  <td>${m.name}</td>
                  <td>${m.email}</td>
                  <td>${m.role}</td>
                  <td>
                    ${
                      org.role === 'owner' && m.role !== 'owner'
                        ? html`<form method="post" action="/console/team/${m.id}/remove" class="inline">
                            ${csrfField(ctx)}<button class="danger">Remove</button>
                          </form>`
                        : ''
                    }
                  </td>
                </tr>`,
            )}
          </tbody>
        </table>
        ${
          link
            ? html`<p class="flash" role="status">Send this link to the person you invited (valid 7 days, for their address only):</p>
                <p class="secret" id="invite-link">${link}</p>
                ${copyButton('invite-link')}`
            : ''
        }
        ${
          org.role === 'owner'
            ? html`<h2>Invite someone</h2>
                <form method="post" action="/console/team/invite" class="stack">
                  ${csrfField(ctx)}<label>Their email <input name="email" type="email" required autocomplete="off" /></label
                  ><button>Create invitation link</button>
                </form>`
            : html`<p class="muted">Only the owner invites people.</p>`
        }
        ${
          invitations.length
            ? html`<h2>Pending invitations</h2>
                <ul>
                  ${invitations.map((i) => html`<li>${i.email} (until ${when(i.expiresAt)})</li>`)}
                </ul>`
            : ''
        }
        <p class="muted">Signed in as ${user.session.person.email}.</p>`,
    );
  }
  router.get('/team', (ctx) => teamPage(ctx));

  router.post('/team/:person/remove', async (ctx) => {
    const { user } = requireOrg(ctx);
    await refusingPlainly(removeMember(deps, personOf(user), ctx.params.person));
    ctx.redirect('/console/team');
  });

  router.post('/team/invite', async (ctx) => {
    const { user } = requireOrg(ctx);
    const token = await refusingPlainly(invite(deps, personOf(user), fieldsOf(ctx, { email: text(400) }).email));
    ctx.set('Cache-Control', 'no-store');
    await teamPage(ctx, `${baseUrlOf(ctx)}${inviteUrl(token)}`);
  });
}

/** The organisation's own provider keys, set by its owner only. */
function providerKeyRoutes(router: Router, deps: RouteDeps): void {
  router.get('/provider-keys', async (ctx) => {
    const { user, org } = requireOrg(ctx);
    const configured = await ownProviderKeysOf(deps, personOf(user));
    const families = [...KEY_FAMILIES, 'bedrock'];
    page(
      ctx,
      'Provider keys',
      html`<p>
          With your own provider access, seat calls run on and bill to your provider account (platform fee 0.5%). Judge and synthesis always
          run on the service's keys. Keys are stored encrypted and never shown back.
        </p>
        <table>
          <thead>
            <tr>
              <th>Family</th>
              <th>State</th>
              <th></th>
            </tr>
          </thead>
          <tbody>
            ${families.map(
              (f) =>
                html`<tr>
                  <td>${f}</td>
                  <td>${configured.has(f) ? html`<span class="ok">configured</span>` : 'not set'}</td>
                  <td>
                    ${
                      configured.has(f) && org.role === 'owner'
                        ? html`<form method="post" action="/console/provider-keys/${f}/remove" class="inline">
                            ${csrfField(ctx)}<button class="danger">Remove</button>
                          </form>`
                        : ''
                    }
                  </td>
                </tr>`,
            )}
          </tbody>
        </table>
        ${
          org.role === 'owner'
            ? html`<h2>Set a provider key</h2>
                <form method="post" action="/console/provider-keys" class="stack">
                  ${csrfField(ctx)}
                  <label
                    >Family
                    <select name="family">
                      ${KEY_FAMILIES.map((f) => html`<option>${f}</option>`)}
                    </select></label
                  >
                  <label>API key <input name="api_key" type="password" autocomplete="off" required /></label>
                  <button>Save key</button>
                </form>
                <h2>Connect AWS Bedrock</h2>
                <form method="post" action="/console/provider-keys/bedrock" class="stack">
                  ${csrfField(ctx)}
                  <label>Role ARN <input name="role_arn" required autocomplete="off" /></label>
                  <label>External id <input name="external_id" required autocomplete="off" /></label>
                  <button>Save role</button>
                </form>`
            : html`<p class="muted">Only the organisation's owner configures provider keys.</p>`
        }`,
    );
  });

  // The owner's refusal and an unknown family read as before; any other refusal of the values is worded for the page.
  const refusedValues = (message: string) => (err: unknown) => {
    throw err instanceof QuorumError && err.code !== 'forbidden' && err.param !== 'family' ? new ConsoleRefusal(400, message) : err;
  };

  router.post('/provider-keys', async (ctx) => {
    const { user } = requireOrg(ctx);
    const form = fieldsOf(ctx, { family: text(20), api_key: text(1_000) });
    await refusingPlainly(
      setOwnProviderKey(deps, personOf(user), { family: form.family, apiKey: form.api_key }).catch(
        refusedValues('That does not look like a provider API key.'),
      ),
    );
    ctx.redirect('/console/provider-keys');
  });

  router.post('/provider-keys/:family/remove', async (ctx) => {
    const { user } = requireOrg(ctx);
    await refusingPlainly(removeOwnProviderKey(deps, personOf(user), { family: ctx.params.family }));
    ctx.redirect('/console/provider-keys');
  });

  router.post('/provider-keys/bedrock', async (ctx) => {
    const { user } = requireOrg(ctx);
    const form = fieldsOf(ctx, { role_arn: text(300), external_id: text(300) });
    await refusingPlainly(
      setOwnBedrockRole(deps, personOf(user), { roleArn: form.role_arn, externalId: form.external_id }).catch(
        refusedValues('That role ARN or external id is not valid.'),
      ),
    );
    ctx.redirect('/console/provider-keys');
  });
}
