import type { Context } from 'koa';
import type { EngineListing } from '../../../operations/authoring/modes';
import { TIER_RANK, TIERS } from '../../../domain/modes';
import { isSimEngine } from '../../../domain/seat-assignment';
import { html, type Html } from '../../http/html';
import { csrfField } from '../layout';
import {
  BASE_FIELD,
  fieldNames,
  JSON_FIELD,
  placeRefusals,
  slotNames,
  type Control,
  type Field,
  type Section,
  type Shown,
  type Spec,
} from '../mode-fields';

/**
 * The mode editor's markup (fields named by spec path, see mode-fields.ts). Stable hooks for tests and the browser:
 * the form is `#mode-form`; each field `#field-<name>` (dots as dashes) with its refusals in `#refusal-<name>`
 * (`.refusal`, each refusal's code in `<code>`), which the field names in `aria-describedby` and, while it holds
 * any, marks with `aria-invalid`; refusals that no field names are listed in `#refusal-summary`.
 */

export interface EditorState {
  /** What the fields and the JSON show. */
  spec: Spec;
  /** The mode being edited; absent for a new one. */
  modeId?: string;
  refusals: readonly Shown[];
  /** What refused the last post, said once at the top with its code. */
  error?: { code: string; message: string };
  /** Whether the spec was checked (a page freshly opened says nothing yet). */
  checked: boolean;
}

const dashed = (name: string): string => name.replace(/\./g, '-');
export const fieldId = (name: string): string => `field-${dashed(name)}`;
export const slotId = (name: string): string => `refusal-${dashed(name)}`;

/** Where a field's (or a section's) refusals show; `oob` when live validation swaps it in by id. */
export function refusalSlot(name: string, refusals: readonly Shown[], opts: { field?: boolean; oob?: boolean } = {}): Html {
  return html`<div
    id="${slotId(name)}"
    class="refusal"
    ${opts.field ? html`data-refusal-for="${fieldId(name)}"` : ''}
    ${opts.oob ? html`hx-swap-oob="true"` : ''}
  >
    ${refusals.map((r) => html`<p><code>${r.code}</code> ${r.message}</p>`)}
  </div>`;
}

function summary(state: Pick<EditorState, 'error' | 'checked'>, total: number, unplaced: readonly Shown[]): Html {
  const error = state.error;
  return html`<div id="refusal-summary" role="status">
    ${error ? html`<p class="flash error">${error.message} (<code>${error.code}</code>)</p>` : ''}
    ${
      state.checked && total === 0 && !error
        ? html`<p class="ok">No refusals: this spec passes every check a save runs.</p>`
        : total > 0
          ? html`<p class="error-box">
              ${total === 1 ? 'One refusal' : `${total} refusals`}${unplaced.length < total ? ', each shown beside its field' : ''}.
            </p>`
          : ''
    }
    ${
      unplaced.length > 0
        ? html`<ul class="refusal">
            ${unplaced.map((r) => html`<li><code>${r.code}</code> ${r.path ? html`<code>${r.path}</code>: ` : ''}${r.message}</li>`)}
          </ul>`
        : ''
    }
  </div>`;
}

function option(value: string, label: string, current: string): Html {
  return html`<option value="${value}" ${value === current ? html`selected` : ''}>${label}</option>`;
}

/** A value the JSON holds that the list does not offer is offered too, so showing the page never changes the spec. */
function unlisted(values: readonly string[], current: string): Html {
  return current !== '' && !values.includes(current) ? option(current, `${current} (not in the list)`, current) : html``;
}

function engineLabel(e: EngineListing): string {
  const where =
    e.answers === null
      ? ', cannot run here'
      : e.answers === e.id
        ? ''
        : isSimEngine(e.answers)
          ? ', simulated stand-in here'
          : `, answered by ${e.answers} here`;
  return `${e.id} (${e.maker}${e.simulated ? ', simulated' : ''}${where})`;
}

function input(control: Control, value: string, attrs: Html, engines: readonly EngineListing[]): Html {
  switch (control.kind) {
    case 'text':
      return html`<input ${attrs} value="${value}" autocomplete="off" />`;
    case 'number':
      return html`<input ${attrs} type="number" min="${control.min}" max="${control.max}" step="any" value="${value}" />`;
    case 'textarea':
      return html`<textarea ${attrs} rows="3">${value}</textarea>`;
    case 'choice':
      return html`<select ${attrs}>
        ${control.choices.map(([v, label]) => option(v, label, value))}${unlisted(
          control.choices.map(([v]) => v),
          value,
        )}
      </select>`;
    case 'engine': {
      const offered = engines.filter((e) => TIER_RANK[e.tier] <= TIER_RANK[control.upTo]);
      return html`<select ${attrs}>
        ${control.extra.map(([v, label]) => option(v, label, value))}
        ${TIERS.filter((t) => TIER_RANK[t] <= TIER_RANK[control.upTo]).map(
          (t) =>
            html`<optgroup label="${t}">${offered.filter((e) => e.tier === t).map((e) => option(e.id, engineLabel(e), value))}</optgroup>`,
        )}
        ${unlisted([...control.extra.map(([v]) => v), ...offered.map((e) => e.id)], value)}
      </select>`;
    }
  }
}

function fieldHtml(field: Field, value: string, refusals: readonly Shown[], engines: readonly EngineListing[]): Html {
  const attrs = html`id="${fieldId(field.name)}" name="${field.name}" aria-describedby="${slotId(field.name)}"
  ${refusals.length > 0 ? html`aria-invalid="true"` : ''}`;
  return html`<div class="field">
    <label for="${fieldId(field.name)}">${field.label}${field.hint ? html` <span class="hint">${field.hint}</span>` : ''}</label>
    ${input(field.control, value, attrs, engines)} ${refusalSlot(field.name, refusals, { field: true })}
  </div>`;
}

function sectionHtml(section: Section, spec: Spec, at: ReadonlyMap<string, Shown[]>, engines: readonly EngineListing[]): Html {
  return html`<fieldset ${section.slot ? html`aria-describedby="${slotId(section.slot)}"` : ''}>
    <legend>${section.legend}</legend>
    ${section.slot ? refusalSlot(section.slot, at.get(section.slot) ?? []) : ''}
    ${section.units.map((unit) => {
      const values = unit.read(spec);
      return unit.fields.map((f, i) => fieldHtml(f, values[i], at.get(f.name) ?? [], engines));
    })}
    ${section.sections ? html`<div class="rows">${section.sections.map((s) => sectionHtml(s, spec, at, engines))}</div>` : ''}
  </fieldset>`;
}

/** The editor: saves to `action`; checks itself on every change through `/console/modes/validate`. */
export function editorMarkup(
  ctx: Context,
  sections: readonly Section[],
  engines: readonly EngineListing[],
  state: EditorState,
  action: string,
): Html {
  const { at, unplaced } = placeRefusals(state.refusals, slotNames(sections));
  const jsonRefusals = at.get(JSON_FIELD) ?? [];
  return html`<form
      id="mode-form"
      class="mode-form"
      method="post"
      action="${action}"
      novalidate
      hx-post="/console/modes/validate"
      hx-trigger="change delay:400ms"
      hx-target="#refusal-summary"
      hx-swap="outerHTML"
      hx-sync="this:replace"
    >
      ${csrfField(ctx)} ${state.modeId ? html`<input type="hidden" name="mode_id" value="${state.modeId}" />` : ''}
      <input type="hidden" name="${BASE_FIELD}" value="${JSON.stringify(state.spec)}" />
      ${summary(state, state.refusals.length, unplaced)} ${sections.map((s) => sectionHtml(s, state.spec, at, engines))}
      <details ${jsonRefusals.length > 0 ? html`open` : ''}>
        <summary>Advanced: JSON</summary>
        <div class="field">
          <label for="${fieldId(JSON_FIELD)}"
            >The whole spec
            <span class="hint"
              >Everything the fields above say, and what they do not (auto-pick pool, seat backups, <code>min_tier</code>…). A field you
              change wins over the JSON; the JSON wins everywhere else.</span
            ></label
          >
          <textarea
            id="${fieldId(JSON_FIELD)}"
            name="${JSON_FIELD}"
            rows="24"
            spellcheck="false"
            aria-describedby="${slotId(JSON_FIELD)}"
            ${jsonRefusals.length > 0 ? html`aria-invalid="true"` : ''}
          >
${JSON.stringify(state.spec, null, 2)}</textarea>
          ${refusalSlot(JSON_FIELD, jsonRefusals, { field: true })}
        </div>
      </details>
      <div class="actions">
        <button name="action" value="draft">Save draft</button>
        <button name="action" value="release" class="secondary">Save and release</button>
      </div>
    </form>
    <script src="/console/assets/mode-editor.js" defer></script>`;
}

/** Live validation's answer: the summary in place, and every slot swapped in by id (empty ones clear old refusals). */
export function validationFragment(sections: readonly Section[], state: Pick<EditorState, 'refusals' | 'error'>): Html {
  const slots = slotNames(sections);
  const { at, unplaced } = placeRefusals(state.refusals, slots);
  const fields = fieldNames(sections);
  return html`${summary({ ...state, checked: true }, state.refusals.length, unplaced)}
  ${[...slots].map((s) => refusalSlot(s, at.get(s) ?? [], { field: fields.has(s), oob: true }))}`;
}

/** Keeps each field's `aria-invalid` in step with its slot after live validation swapped the slots (served as a file: the CSP forbids inline script). */
export const MODE_EDITOR_JS = `document.addEventListener('htmx:afterSettle', () => {
  for (const slot of document.querySelectorAll('[data-refusal-for]')) {
    const field = document.getElementById(slot.dataset.refusalFor);
    if (!field) continue;
    if (slot.childElementCount > 0) field.setAttribute('aria-invalid', 'true');
    else field.removeAttribute('aria-invalid');
  }
});`;
