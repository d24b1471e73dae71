import type Router from '@koa/router';
import { randomBytes, randomUUID } from 'node:crypto';
import type { Context } from 'koa';
import {
  checkModeSpec,
  inviteOrganisation,
  listEngines,
  listMode,
  listOrganisationModes,
  modeDetail,
  releaseMode,
  saveMode,
  type EngineListing,
  type ModeDetail,
} from '../../../operations/authoring/modes';
import { proposeMode, type ModeProposal } from '../../../operations/authoring/propose';
import type { AuthContext } from '../../../db/repositories/api-keys';
import type { Membership } from '../../../db/repositories/people';
import type { ModeCertification } from '../../../db/repositories/runs';
import { QuorumError } from '../../../domain/errors';
import { modeTemplate } from '../../../domain/mode-spec';
import { microsToUsd } from '../../../domain/money';
import { BUCKETS, type Bucket } from '../../../domain/questions/types';
import type { RunKind } from '../../../domain/runs';
import { workflowIds } from '../../../domain/workflow-ids';
import { launchCertification, launchTestRun, type LaunchOptions, type LaunchView } from '../../../operations/run-launch';
import { FORM_B_DIFFICULTIES, parseTestRunRequest } from '../../../operations/requests/runs';
import { certificationsOf } from '../../../operations/run-list';
import { consoleAuth, consoleAuthoring, type Authoring } from '../console-auth';
import type { ConsoleDeps } from '../deps';
import { fieldsOf, text } from '../fields';
import { html, type Html } from '../../http/html';
import { csrfField, page } from '../layout';
import { editorSections, isShown, postedValue, specFromFields, type Shown, type Spec } from '../mode-fields';
import { ConsoleRefusal, requireOrg } from '../session';
import { editorForm, fieldId, MODE_EDITOR_JS, refusalSlot, slotId, validationFragment, type EditorState } from './mode-editor';

/**
 * The web mode builder (issue 14): another edge on the authoring core (`authoring/modes.ts`, `propose.ts`), called
 * as `{via: 'console', orgId}`, and on the run launches of `/v1/tests` and `/v1/certify` (`run-launch.ts`) with the
 * console's `AuthContext` (console-auth.ts). Every rule and code is theirs; this file only lays them out: refusals
 * beside the fields they name, errors with their codes, and Post/Redirect/Get after every change.
 */

type Problem = { code: string; message: string };

const usd = (micros: number): string => `$${microsToUsd(BigInt(micros)).toFixed(micros % 10_000 === 0 ? 2 : 4)}`;

type Done = 'draft' | 'released' | 'invited' | 'published';

/** Said once after a redirect (`?done=`): fixed texts, so no text of a request is echoed from a URL. */
const DONE: Readonly<Record<Done, (m: ModeDetail) => string>> = {
  draft: (m) => `Draft saved (revision ${m.draft?.revision ?? 0}).${m.lab_model ? ` Call it as ${m.lab_model}.` : ''}`,
  released: (m) => `Released: version ${m.version}, mode_config_hash ${m.mode_config_hash ?? ''}.`,
  invited: () => 'Invitation recorded: the organisation may call the lab version.',
  published: (m) => `Listed in the marketplace at version ${m.listing?.version ?? m.version}.`,
};

/** The current version's latest certification: verdict, lower bound, date and its run; a test key's marked simulated. */
function certificationCell(c: ModeCertification | undefined): Html {
  if (!c) return html`<span class="certification">not certified yet</span>`;
  const bound = c.lowerBound === null ? '' : `, lower bound ${c.lowerBound.toFixed(3)}`;
  return html`<span class="certification"
    >${c.verdict}${bound}, ${c.completedAt.toISOString().slice(0, 10)}${c.simulated ? ' (simulated)' : ''}
    <a href="/console/runs/${encodeURIComponent(c.runId)}">run</a></span
  >`;
}

/** A new mode starts from the template without its name and ticker, which are the author's to choose. */
function blankSpec(): Spec {
  const spec = modeTemplate();
  delete spec.name;
  delete spec.ticker;
  return spec;
}

/** A posted count as the run request takes it: a whole number, or the text as typed (refused with the field named). */
function whole(value: unknown): unknown {
  return typeof value === 'string' && /^\d{1,6}$/.test(value.trim()) ? Number(value) : value;
}

/** What the runs box shows: a price to launch, or what refused it (a count beside its field, the rest with its code). */
interface RunsState {
  counts: Record<string, string>;
  priced?: { kind: RunKind; view: LaunchView; seed: number; key: string };
  refusals?: Shown[];
  problem?: Problem;
}

interface ModePageExtras {
  problem?: Problem;
  editor?: Partial<EditorState>;
  runs?: RunsState;
}

export function modePages(router: Router, deps: ConsoleDeps): void {
  const sections = editorSections(deps.form);
  /** The run request's count fields, named as in `/v1/tests` of this Form (`questions.easy`, or `buckets.light`). */
  const countGroup = deps.form === 'B' ? 'questions' : 'buckets';
  const countFields = (deps.form === 'B' ? Object.keys(FORM_B_DIFFICULTIES) : [...BUCKETS]).map((n) => `${countGroup}.${n}`);
  const defaultCounts = Object.fromEntries(countFields.map((f) => [f, '5']));
  const bucketOf = (field: string): Bucket => {
    const name = field.split('.')[1];
    return deps.form === 'B' ? FORM_B_DIFFICULTIES[name] : (name as Bucket);
  };

  const authoring = (org: Membership): Authoring => consoleAuthoring(deps, org);

  function enginesFor(org: Membership): Promise<EngineListing[]> {
    const a = authoring(org);
    return listEngines(a.deps, a.author);
  }

  /** The refusals an error carries in its detail (`mode_invalid`, a release whose draft no longer passes). */
  function listedRefusals(err: QuorumError): Shown[] {
    const listed = err.detail?.refusals;
    return Array.isArray(listed) ? listed.filter(isShown) : [];
  }

  /** What refused a save, beside the fields: the listed refusals, else the error itself beside the field its `param` names. */
  function refusalsOf(err: QuorumError): Shown[] {
    const listed = listedRefusals(err);
    if (listed.length > 0) return listed;
    return err.param ? [{ code: err.code, message: err.message, path: err.param }] : [];
  }

  /** Every refusal of a posted editor's spec, checked as a save would check it (nothing written). */
  async function refusalsFor(org: Membership, form: ReturnType<typeof specFromFields>, modeId: string | undefined): Promise<Shown[]> {
    const a = authoring(org);
    const checked = await checkModeSpec(a.deps, a.author, { spec: form.spec, modeId });
    return [...(form.refusal ? [form.refusal] : []), ...checked.refusals];
  }

  function problemHtml(problem: Problem | undefined, id: string): Html {
    return problem ? html`<p class="flash error" role="alert" id="${id}">${problem.message} (<code>${problem.code}</code>)</p>` : html``;
  }

  // Live validation's small script, a file because the CSP forbids inline script.
  router.get('/assets/mode-editor.js', (ctx) => {
    ctx.type = 'text/javascript; charset=utf-8';
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.body = MODE_EDITOR_JS;
  });

  router.get('/modes', async (ctx) => {
    const { org } = requireOrg(ctx);
    const modes = await listOrganisationModes(authoring(org).deps, org.orgId);
    const certified = await certificationsOf(
      deps,
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

  /** The new-mode page: a proposal from a description, and the editor (the template with its name and ticker cleared). */
  async function newModePage(
    ctx: Context,
    org: Membership,
    extras: { editor?: Partial<EditorState>; proposal?: ModeProposal; problem?: Problem } = {},
  ): Promise<void> {
    const engines = await enginesFor(org);
    const state: EditorState = { spec: blankSpec(), refusals: [], checked: false, ...extras.editor };
    const proposal = extras.proposal;
    page(
      ctx,
      'New mode',
      html`${problemHtml(extras.problem, 'propose-error')}
        <h2>Start from a description</h2>
        <form method="post" action="/console/modes/propose" class="stack">
          ${csrfField(ctx)}
          <label
            >What is the mode for? <span class="hint">What it answers and what matters in its answers.</span>
            <textarea name="description" rows="3" required></textarea>
          </label>
          <label
            >Budget per deep call in USD <span class="hint">Optional.</span> <input name="budget_usd" type="number" min="0" step="any"
          /></label>
          <button class="secondary">Propose a mode</button>
        </form>
        ${
          proposal
            ? html`<div class="card" id="proposal" role="status">
                <p>A proposal, checked as a save would check it. Nothing is saved until you save it below.</p>
                <ul>
                  ${proposal.rationale.map((line) => html`<li>${line}</li>`)}
                </ul>
                <p>
                  Price per call at the ${proposal.price.tier} tier: light $${proposal.price.per_call_usd.light}, medium
                  $${proposal.price.per_call_usd.medium}, deep $${proposal.price.per_call_usd.deep}.
                </p>
              </div>`
            : ''
        }
        <h2>Write the spec</h2>
        ${editorForm(ctx, sections, engines, state, '/console/modes/new')}`,
    );
  }

  router.get('/modes/new', async (ctx) => {
    const { org } = requireOrg(ctx);
    await newModePage(ctx, org);
  });

  router.post('/modes/propose', async (ctx) => {
    const { org } = requireOrg(ctx);
    const form = fieldsOf(ctx, { description: text(2_000), budget_usd: text(20) });
    const a = authoring(org);
    try {
      const proposal = await proposeMode(a.deps, a.author, {
        description: form.description,
        budgetUsd: form.budget_usd.trim() === '' ? undefined : Number(form.budget_usd),
      });
      await newModePage(ctx, org, { proposal, editor: { spec: proposal.proposal, checked: true } });
    } catch (err) {
      if (!(err instanceof QuorumError)) throw err;
      ctx.status = err.spec.status;
      await newModePage(ctx, org, { problem: err });
    }
  });

  router.post('/modes/validate', async (ctx) => {
    const { org } = requireOrg(ctx);
    const body = ctx.request.body as Spec;
    const modeId = typeof body.mode_id === 'string' && body.mode_id !== '' ? body.mode_id : undefined;
    let state: Pick<EditorState, 'refusals' | 'error'>;
    try {
      state = { refusals: await refusalsFor(org, specFromFields(sections, body), modeId) };
    } catch (err) {
      // Answered in the summary, which live validation swaps (the error page would replace it).
      if (!(err instanceof QuorumError)) throw err;
      state = { refusals: [], error: err };
    }
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = validationFragment(sections, state).value;
  });

  /**
   * Saves the posted editor (`action`: draft, or release). A refusal re-renders the same editor with each refusal
   * beside its field; a JSON that does not parse saves nothing.
   */
  async function saveFromForm(ctx: Context, org: Membership, modeId: string | undefined): Promise<void> {
    const body = ctx.request.body as Spec;
    const release = body.action === 'release';
    const form = specFromFields(sections, body);
    const { spec, refusal } = form;
    const a = authoring(org);
    const refused = (status: number, editor: Partial<EditorState>): Promise<void> => {
      ctx.status = status;
      const state = { spec, checked: true, ...editor };
      return modeId ? modePage(ctx, org, modeId, { editor: state }) : newModePage(ctx, org, { editor: state });
    };
    try {
      if (refusal)
        return await refused(400, {
          refusals: await refusalsFor(org, form, modeId),
          error: { code: refusal.code, message: 'Nothing was saved: the JSON is not a spec object.' },
        });
      const saved = await saveMode(a.deps, a.author, { spec, modeId, release });
      ctx.redirect(`/console/modes/${encodeURIComponent(saved.mode_id)}?done=${release ? 'released' : 'draft'}`);
    } catch (err) {
      if (!(err instanceof QuorumError)) throw err;
      const refusals = refusalsOf(err);
      await refused(err.spec.status, {
        refusals,
        error: { code: err.code, message: refusals.length > 0 ? 'Nothing was saved.' : err.message },
      });
    }
  }

  router.post('/modes/new', async (ctx) => {
    const { org } = requireOrg(ctx);
    await saveFromForm(ctx, org, undefined);
  });

  function versionsHtml(ctx: Context, m: ModeDetail): Html {
    return html`<h2>Versions</h2>
      <table id="versions">
        <thead>
          <tr>
            <th>Version</th>
            <th>mode_config_hash</th>
            <th>When</th>
          </tr>
        </thead>
        <tbody>
          ${
            m.draft
              ? html`<tr id="draft-row">
                  <td>Draft, revision ${m.draft.revision}</td>
                  <td><code>${m.draft.config_hash}</code></td>
                  <td>${m.draft.saved_at ?? ''}</td>
                </tr>`
              : ''
          }
          ${m.versions.map(
            (v) =>
              html`<tr>
                <td>${v.version}${v.version === m.version ? ' (current)' : ''}</td>
                <td><code>${v.mode_config_hash}</code></td>
                <td>${v.released_at}</td>
              </tr>`,
          )}
        </tbody>
      </table>
      ${
        m.draft
          ? html`<form method="post" action="/console/modes/${encodeURIComponent(m.mode_id)}/release" class="inline">
              ${csrfField(ctx)}<button>Release the draft</button>
            </form>`
          : ''
      }`;
  }

  function labHtml(ctx: Context, m: ModeDetail): Html {
    if (!m.lab_model) return html``;
    return html`<h2>Lab version</h2>
      <p>
        <code>${m.lab_model}</code> calls the draft (the current release when there is none): your organisation may call it, and the
        organisations you invite.
      </p>
      ${
        m.lab_invited.length > 0
          ? html`<ul id="lab-invited">
              ${m.lab_invited.map((id) => html`<li><code>${id}</code></li>`)}
            </ul>`
          : html`<p class="muted">No organisation is invited yet.</p>`
      }
      <form method="post" action="/console/modes/${encodeURIComponent(m.mode_id)}/invite" class="stack">
        ${csrfField(ctx)}<label for="invite-org">Organisation id</label>
        <input id="invite-org" name="org_id" required autocomplete="off" />
        <button>Invite to ${m.lab_model}</button>
      </form>`;
  }

  function marketplaceHtml(ctx: Context, m: ModeDetail): Html {
    const listed = m.listing?.state === 'listed' && m.listing.version === m.version;
    return html`<h2>Marketplace</h2>
      <p id="listing">
        ${m.listing ? `Listing: ${m.listing.state}${m.listing.version ? ` at version ${m.listing.version}` : ''}.` : 'Not listed.'} Listed
        modes are seen and called by every organisation${deps.form === 'B' ? ', and may be certified' : ''}.
      </p>
      ${
        m.version === 0
          ? html`<p>Release the mode to publish it.</p>`
          : listed
            ? ''
            : html`<form method="post" action="/console/modes/${encodeURIComponent(m.mode_id)}/publish" class="inline">
                ${csrfField(ctx)}<button>Publish version ${m.version}</button>
              </form>`
      }`;
  }

  function countInput(field: string, value: string, refusals: readonly Shown[]): Html {
    const label = field.split('.')[1];
    return html`<div class="field">
      <label for="${fieldId(field)}">${label[0].toUpperCase()}${label.slice(1)}</label>
      <input
        id="${fieldId(field)}"
        name="${field}"
        type="number"
        min="${deps.form === 'B' ? 0 : 1}"
        step="1"
        value="${value}"
        aria-describedby="${slotId(field)}"
        ${refusals.length > 0 ? html`aria-invalid="true"` : ''}
      />
      ${refusalSlot(field, refusals, { field: true })}
    </div>`;
  }

  function pricedHtml(ctx: Context, m: ModeDetail, priced: NonNullable<RunsState['priced']>, counts: Record<string, string>): Html {
    const { view, kind } = priced;
    const what = kind === 'test' ? 'test run' : 'certification';
    return html`<div class="card" id="run-price" role="status">
      <h3>Priced: ${what} of ${view.totalQuestions} questions</h3>
      <p>
        Price <strong id="run-price-usd">${usd(view.priceMicros)}</strong>, about ${view.estimatedMinutes}
        ${view.estimatedMinutes === 1 ? 'minute' : 'minutes'}
        (${countFields.map((f) => `${f.split('.')[1]} ${view.counts[bucketOf(f)]}`).join(', ')}).
      </p>
      <p class="muted">${view.note}</p>
      ${
        view.requiresListing
          ? html`<p>Certification needs the mode listed in the marketplace: publish it above, then price it again.</p>`
          : html`<form method="post" action="/console/modes/${encodeURIComponent(m.mode_id)}/runs/launch" class="inline">
              ${csrfField(ctx)}<input type="hidden" name="kind" value="${kind}" />
              ${kind === 'test' ? countFields.map((f) => html`<input type="hidden" name="${f}" value="${counts[f] ?? ''}" />`) : ''}
              <input type="hidden" name="seed" value="${priced.seed}" />
              <input type="hidden" name="max_price_micros" value="${view.priceMicros}" />
              <input type="hidden" name="idempotency_key" value="${priced.key}" />
              <button>Launch ${what}: charge ${usd(view.priceMicros)}</button>
            </form>`
      }
    </div>`;
  }

  function runsHtml(ctx: Context, m: ModeDetail, runs: RunsState | undefined): Html {
    const action = `/console/modes/${encodeURIComponent(m.mode_id)}/runs/price`;
    const counts = runs?.counts ?? defaultCounts;
    const refusals = runs?.refusals ?? [];
    return html`<section id="runs-box" aria-labelledby="runs-heading">
      <h2 id="runs-heading">Runs</h2>
      ${
        m.version === 0
          ? html`<p>Release the mode to run tests on it.</p>`
          : html`${problemHtml(runs?.problem, 'run-refusal')}
              <div class="grid2">
                <form method="post" action="${action}" class="stack" id="price-test">
                  ${csrfField(ctx)}<input type="hidden" name="kind" value="test" />
                  <fieldset>
                    <legend>Test run: questions per difficulty</legend>
                    ${countFields.map((f) =>
                      countInput(
                        f,
                        counts[f] ?? '',
                        refusals.filter((r) => r.path === f),
                      ),
                    )}
                    ${refusalSlot(
                      countGroup,
                      refusals.filter((r) => r.path === countGroup),
                    )}
                  </fieldset>
                  <button class="secondary">Price test run</button>
                </form>
                <form method="post" action="${action}" class="stack" id="price-certification">
                  ${csrfField(ctx)}<input type="hidden" name="kind" value="certification" />
                  <p>Certification: 150 fresh questions, three blind judges, two repeats, a verdict from the 95% lower bound; $50 flat.</p>
                  <button class="secondary">Price certification</button>
                </form>
              </div>
              ${runs?.priced ? pricedHtml(ctx, m, runs.priced, counts) : ''}`
      }
    </section>`;
  }

  /** A mode's page: versions, the editor, the lab version, the marketplace and runs. */
  async function modePage(ctx: Context, org: Membership, modeId: string, extras: ModePageExtras = {}): Promise<void> {
    const a = authoring(org);
    const [m, engines] = await Promise.all([modeDetail(a.deps, a.author, modeId), enginesFor(org)]);
    const key = ctx.query.done;
    const done = typeof key === 'string' && Object.hasOwn(DONE, key) ? DONE[key as Done] : undefined;
    const spec = extras.editor?.spec ?? m.spec;
    page(
      ctx,
      m.name,
      html`${done && ctx.method === 'GET' ? html`<p class="flash" role="status" id="mode-notice">${done(m)}</p>` : ''}
        ${problemHtml(extras.problem, 'mode-error')}
        <p id="mode-summary">
          <code>${m.ticker}</code> · ${m.state} · version ${m.version}
          ${m.mode_config_hash ? html` · mode_config_hash <code>${m.mode_config_hash}</code>` : ''}
          ${deps.form === 'A' ? html` · called as <code>${m.model}</code>` : ''}
        </p>
        ${versionsHtml(ctx, m)}
        <h2>Edit</h2>
        ${
          spec === null || typeof spec !== 'object'
            ? html`<p>This mode was set up from code: it has no spec to edit here.</p>`
            : editorForm(
                ctx,
                sections,
                engines,
                { refusals: [], checked: false, ...extras.editor, spec: spec as Spec, modeId: m.mode_id },
                `/console/modes/${encodeURIComponent(m.mode_id)}`,
              )
        }
        ${labHtml(ctx, m)} ${marketplaceHtml(ctx, m)} ${runsHtml(ctx, m, extras.runs)}`,
    );
  }

  router.get('/modes/:id', async (ctx) => {
    const { org } = requireOrg(ctx);
    await modePage(ctx, org, ctx.params.id);
  });

  router.post('/modes/:id', async (ctx) => {
    const { org } = requireOrg(ctx);
    await saveFromForm(ctx, org, ctx.params.id);
  });

  /**
   * An action on a mode: done → back to its page with a notice; refused → its page with the code (a release whose
   * draft no longer passes shows the draft in the editor with each refusal beside its field).
   */
  function modeAction(done: Done, act: (ctx: Context, a: Authoring) => Promise<unknown>): (ctx: Context) => Promise<void> {
    return async (ctx) => {
      const { org } = requireOrg(ctx);
      try {
        await act(ctx, authoring(org));
        ctx.redirect(`/console/modes/${encodeURIComponent(ctx.params.id)}?done=${done}`);
      } catch (err) {
        if (!(err instanceof QuorumError)) throw err;
        ctx.status = err.spec.status;
        const refusals = listedRefusals(err);
        await modePage(
          ctx,
          org,
          ctx.params.id,
          refusals.length > 0
            ? { editor: { refusals, checked: true, error: { code: err.code, message: 'Nothing was released.' } } }
            : { problem: err },
        );
      }
    };
  }

  router.post(
    '/modes/:id/release',
    modeAction('released', (ctx, a) => releaseMode(a.deps, a.author, ctx.params.id)),
  );

  router.post(
    '/modes/:id/invite',
    modeAction('invited', (ctx, a) => {
      const { org_id } = fieldsOf(ctx, { org_id: text(100) });
      if (org_id.trim() === '') throw new ConsoleRefusal(400, 'Enter the id of the organisation to invite.');
      return inviteOrganisation(a.deps, a.author, ctx.params.id, org_id.trim());
    }),
  );

  router.post(
    '/modes/:id/publish',
    modeAction('published', (ctx, a) => listMode(a.deps, a.author, ctx.params.id)),
  );

  /** The run the runs box asks for, priced (`dryRun`) or launched, through the same operation as `/v1/tests` and `/v1/certify`. */
  async function startRun(
    auth: AuthContext,
    kind: RunKind,
    model: string,
    body: Spec,
    dryRun: boolean,
    opts: LaunchOptions,
  ): Promise<LaunchView> {
    if (kind === 'certification') return launchCertification(deps, auth, { model, dryRun, ...opts });
    const counts = Object.fromEntries(countFields.map((f) => [f.split('.')[1], whole(postedValue(body, f))]));
    const request = parseTestRunRequest(deps.form, { model, [countGroup]: counts, dry_run: dryRun });
    return launchTestRun(deps, auth, { request, ...opts });
  }

  /** Prices or launches from the runs box; a refusal shows there (a count beside its field), with its code. */
  function runAction(
    act: (ctx: Context, run: { auth: AuthContext; kind: RunKind; m: ModeDetail; body: Spec }) => Promise<RunsState['priced']>,
  ): (ctx: Context) => Promise<void> {
    return async (ctx) => {
      const { user, org } = requireOrg(ctx);
      const body = ctx.request.body as Spec;
      const kind: RunKind = body.kind === 'certification' ? 'certification' : 'test';
      const a = authoring(org);
      const m = await modeDetail(a.deps, a.author, ctx.params.id);
      const counts = Object.fromEntries(countFields.map((f) => [f, postedValue(body, f) ?? '']));
      let runs: RunsState;
      try {
        const priced = await act(ctx, { auth: await consoleAuth(deps, user, org), kind, m, body });
        // No price: the run was launched and the answer is the redirect to it.
        if (!priced) return;
        runs = { counts, priced };
      } catch (err) {
        if (!(err instanceof QuorumError)) throw err;
        ctx.status = err.spec.status;
        const refusals = err.param?.startsWith(countGroup) ? [{ code: err.code, message: err.message, path: err.param }] : [];
        runs = { counts, refusals, problem: refusals.length > 0 ? undefined : err };
      }
      await modePage(ctx, org, m.mode_id, { runs });
    };
  }

  router.post(
    '/modes/:id/runs/price',
    runAction(async (_ctx, { auth, kind, m, body }) => {
      // The launch draws exactly the questions priced here (the seed), once (the key), at no more than this price.
      const seed = randomBytes(4).readUInt32BE();
      const view = await startRun(auth, kind, m.model, body, true, { seed });
      return { kind, view, seed, key: randomUUID() };
    }),
  );

  router.post(
    '/modes/:id/runs/launch',
    runAction(async (ctx, { auth, kind, m, body }) => {
      const { seed, max_price_micros, idempotency_key } = fieldsOf(ctx, {
        seed: text(12),
        max_price_micros: text(16),
        idempotency_key: text(64),
      });
      if (!/^\d{1,10}$/.test(seed) || !/^\d{1,15}$/.test(max_price_micros) || !/^[0-9a-f-]{36}$/.test(idempotency_key))
        throw new ConsoleRefusal(400, 'This launch form is incomplete; price the run again.');
      // The key guards a double submit in both Forms: with the workflow id set, the launch is keyed even in Form A
      // (whose REST launches take no Idempotency-Key), as an advisor quote's approval is.
      const view = await startRun(auth, kind, m.model, body, false, {
        seed: Number(seed),
        maxPriceMicros: Number(max_price_micros),
        idempotencyKey: idempotency_key,
        workflowId:
          kind === 'test' ? workflowIds.testRun(auth.orgId, idempotency_key) : workflowIds.certification(auth.orgId, idempotency_key),
      });
      if (!view.run) throw new Error('a launch that is not a dry run returns its run');
      ctx.redirect(`/console/runs/${encodeURIComponent(view.run.id)}`);
      return undefined;
    }),
  );
}
