import type Router from '@koa/router';
import type { RouteDeps } from '../../http/context';
import type { Context } from 'koa';
import { checkModeSpec, saveMode } from '../../../operations/authoring/modes';
import { proposeMode, type ModeProposal } from '../../../operations/authoring/propose';
import { QuorumError } from '../../../domain/errors';
import { modeTemplate } from '../../../domain/mode-spec';
import { consoleAuthoring } from '../console-auth';
import { fieldsOf, text } from '../fields';
import { html } from '../../http/html';
import { csrfField, page } from '../layout';
import { editorSections, isShown, specFromFields, type Shown, type Spec } from '../mode-fields';
import { requireOrg, type ConsoleUser } from '../session';
import { editorMarkup, validationFragment, type EditorState } from './mode-editor';
import { enginesFor, modePage, problemHtml, type Problem } from './mode-page';

/**
 * The editor's routes: the new-mode page and a proposal from a description, live validation, and saving the editor
 * of a new mode or of an existing one (a draft, or a release). `/modes/new` and `/modes/propose` are registered
 * before `/modes/:id`, which would otherwise take them.
 */
export function authoringRoutes(router: Router, deps: RouteDeps): void {
  router.get('/modes/new', async (ctx) => {
    const { user } = requireOrg(ctx);
    await newModePage(ctx, deps, user);
  });
  router.post('/modes/propose', (ctx) => proposeRoute(ctx, deps));
  router.post('/modes/validate', (ctx) => validateRoute(ctx, deps));
  router.post('/modes/new', async (ctx) => {
    const { user } = requireOrg(ctx);
    await saveFromFields(ctx, deps, user, undefined);
  });
  router.post('/modes/:id', async (ctx) => {
    const { user } = requireOrg(ctx);
    await saveFromFields(ctx, deps, user, ctx.params.id);
  });
}

/** A new mode starts from the template without its name and ticker, which are the author's to choose. */
function blankSpec(): Spec {
  const spec = modeTemplate();
  delete spec.name;
  delete spec.ticker;
  return spec;
}

/** The new-mode page: a proposal from a description, and the editor (the template with its name and ticker cleared). */
async function newModePage(
  ctx: Context,
  deps: RouteDeps,
  user: ConsoleUser,
  extras: { editor?: Partial<EditorState>; proposal?: ModeProposal; problem?: Problem } = {},
): Promise<void> {
  const engines = await enginesFor(deps, user);
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
      ${editorMarkup(ctx, editorSections(deps.form), engines, state, '/console/modes/new')}`,
  );
}

/** A proposal from a description fills the new-mode page's editor, checked; a refusal shows above it with its code. */
async function proposeRoute(ctx: Context, deps: RouteDeps): Promise<void> {
  const { user } = requireOrg(ctx);
  const fields = fieldsOf(ctx, { description: text(2_000), budget_usd: text(20) });
  const a = consoleAuthoring(deps, user);
  try {
    const proposal = await proposeMode(a.deps, a.author, {
      description: fields.description,
      budgetUsd: fields.budget_usd.trim() === '' ? undefined : Number(fields.budget_usd),
    });
    await newModePage(ctx, deps, user, { proposal, editor: { spec: proposal.proposal, checked: true } });
  } catch (err) {
    if (!(err instanceof QuorumError)) throw err;
    ctx.status = err.spec.status;
    await newModePage(ctx, deps, user, { problem: err });
  }
}

/** Live validation: the editor's refusals as the fragment it swaps in, nothing written. */
async function validateRoute(ctx: Context, deps: RouteDeps): Promise<void> {
  const { user } = requireOrg(ctx);
  const sections = editorSections(deps.form);
  const body = ctx.request.body as Spec;
  const modeId = typeof body.mode_id === 'string' && body.mode_id !== '' ? body.mode_id : undefined;
  let state: Pick<EditorState, 'refusals' | 'error'>;
  try {
    state = { refusals: await refusalsFor(deps, user, specFromFields(sections, body), modeId) };
  } catch (err) {
    // Answered in the summary, which live validation swaps (the error page would replace it).
    if (!(err instanceof QuorumError)) throw err;
    state = { refusals: [], error: err };
  }
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = validationFragment(sections, state).value;
}

/** Every refusal of a posted editor's spec, checked as a save would check it (nothing written). */
async function refusalsFor(
  deps: RouteDeps,
  user: ConsoleUser,
  posted: ReturnType<typeof specFromFields>,
  modeId: string | undefined,
): Promise<Shown[]> {
  const a = consoleAuthoring(deps, user);
  const checked = await checkModeSpec(a.deps, a.author, { spec: posted.spec, modeId });
  return [...(posted.refusal ? [posted.refusal] : []), ...checked.refusals];
}

/** The refusals an error carries in its detail (`mode_invalid`, a release whose draft no longer passes). */
export function listedRefusals(err: QuorumError): Shown[] {
  const listed = err.detail?.refusals;
  return Array.isArray(listed) ? listed.filter(isShown) : [];
}

/** What refused a save, beside the fields: the listed refusals, else the error itself beside the field its `param` names. */
function refusalsOf(err: QuorumError): Shown[] {
  const listed = listedRefusals(err);
  if (listed.length > 0) return listed;
  return err.param ? [{ code: err.code, message: err.message, path: err.param }] : [];
}

/**
 * Saves the posted editor (`action`: draft, or release). A refusal re-renders the same editor with each refusal
 * beside its field; a JSON that does not parse saves nothing.
 */
async function saveFromFields(ctx: Context, deps: RouteDeps, user: ConsoleUser, modeId: string | undefined): Promise<void> {
  const body = ctx.request.body as Spec;
  const release = body.action === 'release';
  const posted = specFromFields(editorSections(deps.form), body);
  const { spec, refusal } = posted;
  const a = consoleAuthoring(deps, user);
  const refused = (status: number, editor: Partial<EditorState>): Promise<void> => {
    ctx.status = status;
    const state = { spec, checked: true, ...editor };
    return modeId ? modePage(ctx, deps, user, modeId, { editor: state }) : newModePage(ctx, deps, user, { editor: state });
  };
  try {
    if (refusal)
      return await refused(400, {
        refusals: await refusalsFor(deps, user, posted, modeId),
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
