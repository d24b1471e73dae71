import type Router from '@koa/router';
import type { RouteDeps } from '../../http/context';
import type { Context } from 'koa';
import { inviteOrganisation, listMode, listOrganisationModes, releaseMode } from '../../../operations/authoring/modes';
import type { ModeCertification } from '../../../db/repositories/certifications';
import { QuorumError } from '../../../domain/errors';
import { certificationsOf } from '../../../operations/run-list';
import { authoringDeps, consoleAuthoring, type Authoring } from '../console-auth';
import { fieldsOf, text } from '../fields';
import { html, type Html } from '../../http/html';
import { page } from '../layout';
import { ConsoleRefusal, personOf, requireOrg } from '../session';
import { MODE_EDITOR_JS } from './mode-editor';
import { authoringRoutes, listedRefusals } from './mode-authoring';
import { modePage, type Done } from './mode-page';
import { runRoutes } from './mode-runs';

/**
 * The web mode builder (issue 14): another edge on the authoring core (`authoring/modes.ts`, `propose.ts`), called
 * as the signed-in person (`personOf`), and on the run launches of `/v1/tests` and `/v1/certify` (`run-launch.ts`)
 * with the key principal a member acts as there (`memberAuth`). Every rule and code is theirs; these files only lay them out: refusals
 * beside the fields they name, errors with their codes, and Post/Redirect/Get after every change. Here the list of
 * modes and a mode's page with its actions; the editor's routes in mode-authoring.ts, the runs box's in mode-runs.ts,
 * a mode's page itself in mode-page.ts.
 */
export function modePages(router: Router, deps: RouteDeps): void {
  editorScriptRoute(router);
  modeListRoute(router, deps);
  // Before `/modes/:id`, which would take `/modes/new` and `/modes/propose`.
  authoringRoutes(router, deps);
  modeRoutes(router, deps);
  runRoutes(router, deps);
}

/** Live validation's small script, a file because the CSP forbids inline script. */
function editorScriptRoute(router: Router): void {
  router.get('/assets/mode-editor.js', (ctx) => {
    ctx.type = 'text/javascript; charset=utf-8';
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.body = MODE_EDITOR_JS;
  });
}

/**
 * The current configuration's listed certification: verdict, lower bounds, tier, date and its run; a test key's marked
 * simulated; then every attempt on the configuration with its verdict (issue 38 item 3: attempts are disclosed).
 */
export function certificationCell(c: ModeCertification | undefined): Html {
  if (!c) return html`<span class="certification">not certified yet</span>`;
  const bound = c.lowerBound === null ? '' : `, lower bound ${c.lowerBound.toFixed(3)}`;
  const adjusted =
    c.adjustedLowerBound === null ? '' : ` (${c.adjustedLowerBound.toFixed(3)} at α ${c.alpha.toPrecision(3)}, attempt ${c.attempt})`;
  return html`<span class="certification"
      >${c.verdict}${bound}${adjusted}, ${c.tiers.join(', ')} tier,
      ${c.completedAt.toISOString().slice(0, 10)}${c.simulated ? ' (simulated)' : ''}
      <a href="/console/runs/${encodeURIComponent(c.runId)}">run</a></span
    >
    <ol class="attempts">
      ${c.attempts.map(
        (a) =>
          html`<li>
            <a href="/console/runs/${encodeURIComponent(a.runId)}">attempt ${a.attempt}</a>: ${a.verdict ?? a.state}, α
            ${a.alpha.toPrecision(3)}
          </li>`,
      )}
    </ol>`;
}

/** The organisation's modes: state, version, listing and certification of each. */
function modeListRoute(router: Router, deps: RouteDeps): void {
  router.get('/modes', async (ctx) => {
    const { user, org } = requireOrg(ctx);
    const modes = await listOrganisationModes(authoringDeps(deps), org.orgId);
    const certified = await certificationsOf(
      deps,
      personOf(user),
      modes.filter((m) => m.state === 'released').map((m) => ({ modeId: m.mode_id, version: m.version })),
    );
    page(
      ctx,
      'Modes',
      html`<p><a class="button" href="/console/modes/new">New mode</a></p>
        ${
          modes.length === 0
            ? html`<p>No modes yet. Build one: its draft is callable at once as its lab version; release it to call it by its ticker.</p>`
            : html`<table id="modes">
                <thead>
                  <tr>
                    <th>Ticker</th>
                    <th>Name</th>
                    <th>State</th>
                    <th class="num">Version</th>
                    <th>mode_config_hash</th>
                    <th>Listing</th>
                    <th>Certification</th>
                    <th>Lab model</th>
                  </tr>
                </thead>
                <tbody>
                  ${modes.map(
                    (m) =>
                      html`<tr>
                        <td><code>${m.ticker}</code></td>
                        <td><a href="/console/modes/${encodeURIComponent(m.mode_id)}">${m.name}</a></td>
                        <td>${m.state}${m.draft && m.state === 'released' ? ' (draft pending)' : ''}</td>
                        <td class="num">${m.version}</td>
                        <td><code>${m.mode_config_hash ?? '—'}</code></td>
                        <td>
                          ${m.listing ? `${m.listing.state}${m.listing.version ? ` (version ${m.listing.version})` : ''}` : 'not listed'}
                        </td>
                        <td>${certificationCell(certified.get(m.mode_id))}</td>
                        <td>${m.lab_model ? html`<code>${m.lab_model}</code>` : '—'}</td>
                      </tr>`,
                  )}
                </tbody>
              </table>`
        }`,
    );
  });
}

/** A mode's page and its actions: releasing the draft, inviting an organisation to the lab version, publishing. */
function modeRoutes(router: Router, deps: RouteDeps): void {
  router.get('/modes/:id', async (ctx) => {
    const { user } = requireOrg(ctx);
    await modePage(ctx, deps, user, ctx.params.id);
  });
  router.post(
    '/modes/:id/release',
    modeAction(deps, 'released', (ctx, a) => releaseMode(a.deps, a.author, ctx.params.id)),
  );
  router.post(
    '/modes/:id/invite',
    modeAction(deps, 'invited', (ctx, a) => {
      const { org_id } = fieldsOf(ctx, { org_id: text(100) });
      if (org_id.trim() === '') throw new ConsoleRefusal(400, 'Enter the id of the organisation to invite.');
      return inviteOrganisation(a.deps, a.author, ctx.params.id, org_id.trim());
    }),
  );
  router.post(
    '/modes/:id/publish',
    modeAction(deps, 'published', (ctx, a) => listMode(a.deps, a.author, ctx.params.id)),
  );
}

/**
 * An action on a mode: done → back to its page with a notice; refused → its page with the code (a release whose
 * draft no longer passes shows the draft in the editor with each refusal beside its field).
 */
function modeAction(deps: RouteDeps, done: Done, act: (ctx: Context, a: Authoring) => Promise<unknown>): (ctx: Context) => Promise<void> {
  return async (ctx) => {
    const { user } = requireOrg(ctx);
    try {
      await act(ctx, consoleAuthoring(deps, user));
      ctx.redirect(`/console/modes/${encodeURIComponent(ctx.params.id)}?done=${done}`);
    } catch (err) {
      if (!(err instanceof QuorumError)) throw err;
      ctx.status = err.spec.status;
      const refusals = listedRefusals(err);
      await modePage(
        ctx,
        deps,
        user,
        ctx.params.id,
        refusals.length > 0
          ? { editor: { refusals, checked: true, error: { code: err.code, message: 'Nothing was released.' } } }
          : { problem: err },
      );
    }
  };
}
