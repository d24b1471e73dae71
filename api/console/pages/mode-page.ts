import type { Context } from 'koa';
import type { RouteDeps } from '../../http/context';
import { listEngines, modeDetail, type EngineListing, type ModeDetail } from '../../../operations/authoring/modes';
import type { Form } from '../../../domain/form';
import { microsToUsd } from '../../../domain/money';
import { BUCKETS, type Bucket } from '../../../domain/questions/types';
import type { RunKind } from '../../../domain/runs';
import type { LaunchView } from '../../../operations/run-launch';
import { FORM_B_DIFFICULTIES } from '../../../operations/requests/runs';
import { consoleAuthoring } from '../console-auth';
import type { ConsoleUser } from '../session';
import { html, type Html } from '../../http/html';
import { csrfField, page } from '../layout';
import { editorSections, type Shown, type Spec } from '../mode-fields';
import { editorMarkup, fieldId, refusalSlot, slotId, type EditorState } from './mode-editor';

/**
 * A mode's page, section by section: its versions, the editor, the lab version, the marketplace and the runs box
 * (see modes.ts). Every page that answers a post on a mode (a refused save, action or run) is this page again.
 */

export type Problem = { code: string; message: string };

export type Done = 'draft' | 'released' | 'invited' | 'published';

/** Said once after a redirect (`?done=`): fixed texts, so no text of a request is echoed from a URL. */
const DONE: Readonly<Record<Done, (m: ModeDetail) => string>> = {
  draft: (m) => `Draft saved (revision ${m.draft?.revision ?? 0}).${m.lab_model ? ` Call it as ${m.lab_model}.` : ''}`,
  released: (m) => `Released: version ${m.version}, mode_config_hash ${m.mode_config_hash ?? ''}.`,
  invited: () => 'Invitation recorded: the organisation may call the lab version.',
  published: (m) => `Listed in the marketplace at version ${m.listing?.version ?? m.version}.`,
};

/** What the runs box shows: a price to launch, or what refused it (a count beside its field, the rest with its code). */
export interface RunsState {
  counts: Record<string, string>;
  priced?: { kind: RunKind; view: LaunchView; seed: number; key: string };
  refusals?: Shown[];
  problem?: Problem;
}

export interface ModePageExtras {
  problem?: Problem;
  editor?: Partial<EditorState>;
  runs?: RunsState;
}

/** The run request's count fields, named as in `/v1/tests` of this Form (`questions.easy`, or `buckets.light`). */
export function countFieldsOf(form: Form): { group: string; fields: string[] } {
  const group = form === 'B' ? 'questions' : 'buckets';
  return { group, fields: (form === 'B' ? Object.keys(FORM_B_DIFFICULTIES) : [...BUCKETS]).map((n) => `${group}.${n}`) };
}

/** The bucket a count field counts: Form B names its difficulties, Form A its buckets. */
function bucketOf(form: Form, field: string): Bucket {
  const name = field.split('.')[1];
  return form === 'B' ? FORM_B_DIFFICULTIES[name] : (name as Bucket);
}

/** A price as the runs box says it: in cents when it is whole cents, else to a hundredth of a cent. */
const priceUsd = (micros: number): string => `$${microsToUsd(BigInt(micros)).toFixed(micros % 10_000 === 0 ? 2 : 4)}`;

/** The engines the editor offers a seat. */
export function enginesFor(deps: RouteDeps, user: ConsoleUser): Promise<EngineListing[]> {
  const a = consoleAuthoring(deps, user);
  return listEngines(a.deps, a.author);
}

/** What refused a post, said with its code at the top of the page (or of the box) it belongs to. */
export function problemHtml(problem: Problem | undefined, id: string): Html {
  return problem ? html`<p class="flash error" role="alert" id="${id}">${problem.message} (<code>${problem.code}</code>)</p>` : html``;
}

/** A mode's page: versions, the editor, the lab version, the marketplace and runs. */
export async function modePage(
  ctx: Context,
  deps: RouteDeps,
  user: ConsoleUser,
  modeId: string,
  extras: ModePageExtras = {},
): Promise<void> {
  const a = consoleAuthoring(deps, user);
  const [m, engines] = await Promise.all([modeDetail(a.deps, a.author, modeId), enginesFor(deps, user)]);
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
          : editorMarkup(
              ctx,
              editorSections(deps.form),
              engines,
              { refusals: [], checked: false, ...extras.editor, spec: spec as Spec, modeId: m.mode_id },
              `/console/modes/${encodeURIComponent(m.mode_id)}`,
            )
      }
      ${labHtml(ctx, m)} ${marketplaceHtml(ctx, deps.form, m)} ${runsHtml(ctx, deps.form, m, extras.runs)}`,
  );
}

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

function marketplaceHtml(ctx: Context, form: Form, m: ModeDetail): Html {
  const listed = m.listing?.state === 'listed' && m.listing.version === m.version;
  return html`<h2>Marketplace</h2>
    <p id="listing">
      ${m.listing ? `Listing: ${m.listing.state}${m.listing.version ? ` at version ${m.listing.version}` : ''}.` : 'Not listed.'} Listed
      modes are seen and called by every organisation${form === 'B' ? ', and may be certified' : ''}.
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

function countInput(form: Form, field: string, value: string, refusals: readonly Shown[]): Html {
  const label = field.split('.')[1];
  return html`<div class="field">
    <label for="${fieldId(field)}">${label[0].toUpperCase()}${label.slice(1)}</label>
    <input
      id="${fieldId(field)}"
      name="${field}"
      type="number"
      min="${form === 'B' ? 0 : 1}"
      step="1"
      value="${value}"
      aria-describedby="${slotId(field)}"
      ${refusals.length > 0 ? html`aria-invalid="true"` : ''}
    />
    ${refusalSlot(field, refusals, { field: true })}
  </div>`;
}

function pricedHtml(
  ctx: Context,
  form: Form,
  m: ModeDetail,
  priced: NonNullable<RunsState['priced']>,
  counts: Record<string, string>,
): Html {
  const { view, kind } = priced;
  const { fields } = countFieldsOf(form);
  const what = kind === 'test' ? 'test run' : 'certification';
  return html`<div class="card" id="run-price" role="status">
    <h3>Priced: ${what} of ${view.totalQuestions} questions</h3>
    <p>
      Price <strong id="run-price-usd">${priceUsd(view.priceMicros)}</strong>, about ${view.estimatedMinutes}
      ${view.estimatedMinutes === 1 ? 'minute' : 'minutes'}
      (${fields.map((f) => `${f.split('.')[1]} ${view.counts[bucketOf(form, f)]}`).join(', ')}).
    </p>
    <p class="muted">${view.note}</p>
    ${
      view.requiresListing
        ? html`<p>Certification needs the mode listed in the marketplace: publish it above, then price it again.</p>`
        : html`<form method="post" action="/console/modes/${encodeURIComponent(m.mode_id)}/runs/launch" class="inline">
            ${csrfField(ctx)}<input type="hidden" name="kind" value="${kind}" />
            ${kind === 'test' ? fields.map((f) => html`<input type="hidden" name="${f}" value="${counts[f] ?? ''}" />`) : ''}
            <input type="hidden" name="seed" value="${priced.seed}" />
            <input type="hidden" name="max_price_micros" value="${view.priceMicros}" />
            <input type="hidden" name="idempotency_key" value="${priced.key}" />
            <button>Launch ${what}: charge ${priceUsd(view.priceMicros)}</button>
          </form>`
    }
  </div>`;
}

function runsHtml(ctx: Context, form: Form, m: ModeDetail, runs: RunsState | undefined): Html {
  const action = `/console/modes/${encodeURIComponent(m.mode_id)}/runs/price`;
  const { group, fields } = countFieldsOf(form);
  const counts = runs?.counts ?? Object.fromEntries(fields.map((f) => [f, '5']));
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
                  ${fields.map((f) =>
                    countInput(
                      form,
                      f,
                      counts[f] ?? '',
                      refusals.filter((r) => r.path === f),
                    ),
                  )}
                  ${refusalSlot(
                    group,
                    refusals.filter((r) => r.path === group),
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
            ${runs?.priced ? pricedHtml(ctx, form, m, runs.priced, counts) : ''}`
    }
  </section>`;
}
