import type { Form } from '../../domain/form';
import {
  CEILING_MAX_USD,
  CRITIQUE,
  DEFAULTS,
  DESCRIPTION_MAX,
  EXPRESS,
  GROUNDING,
  NAME_MAX,
  ROW_SIZE,
  USE_WHEN_MAX,
} from '../../domain/mode-spec';
import { AGGREGATION_METHODS, AGGREGATION_PROSE, DEPTHS, QUORUM_GRACE_MAX_MS, TIE_BREAKS, TIERS, type Tier } from '../../domain/modes';

/**
 * The mode builder's form, apart from its markup: which fields it has (each named by the spec path it edits), how a
 * spec fills them, and how a posted form becomes the spec that is checked and saved.
 *
 * The fields and the "Advanced: JSON" textarea must never disagree about what is saved, and neither may lose an
 * edit. The page also posts, hidden, the spec it was rendered from (`base_json`); the server then merges:
 * a field (or a seat row, or a staff entry) whose value differs from what the page showed was edited, and wins;
 * everywhere else the JSON stands (it also holds what has no field: the auto pool, seat backups, `min_tier`…).
 * So a spec pasted into the JSON is saved as pasted, a field edited is saved as edited, and every page rendered
 * after a post shows fields and JSON from the one merged spec. The rules themselves stay in `validateMode`.
 */

export type Spec = Record<string, unknown>;

export type Control =
  | { kind: 'text' }
  | { kind: 'textarea' }
  | { kind: 'number'; min: number; max: number }
  /** `choices` as [value, label]; the empty value leaves the setting out (its default). */
  | { kind: 'choice'; choices: readonly (readonly [string, string])[] }
  /** An engine of the catalog up to `upTo`, or one of `extra` ([value, label]: none, auto-pick). */
  | { kind: 'engine'; upTo: Tier; extra: readonly (readonly [string, string])[] };

export interface Field {
  /** The spec path it edits, dotted (`seats_by_tier.plus.0`): its `name` in the form. */
  name: string;
  label: string;
  hint?: string;
  control: Control;
}

/** Fields that are edited together: a field alone, a seat row, a staff entry. */
export interface Unit {
  fields: readonly Field[];
  read(spec: Spec): string[];
  write(spec: Spec, values: readonly string[]): void;
}

/** A fieldset of the form; `slot` names the spec path whose refusals it shows (a row, a staff entry, the fees). */
export interface Section {
  legend: string;
  slot?: string;
  units: readonly Unit[];
  sections?: readonly Section[];
}

const isObj = (x: unknown): x is Spec => typeof x === 'object' && x !== null && !Array.isArray(x);

function getPath(spec: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((at, key) => (isObj(at) || Array.isArray(at) ? (at as Spec)[key] : undefined), spec);
}

/** Sets (or, with `undefined`, removes) the value at an object path, making the objects on the way. */
function setPath(spec: Spec, path: string, value: unknown): void {
  const keys = path.split('.');
  let at = spec;
  for (const key of keys.slice(0, -1)) {
    if (!isObj(at[key])) {
      if (value === undefined) return;
      at[key] = {};
    }
    at = at[key] as Spec;
  }
  const last = keys[keys.length - 1];
  if (value === undefined) delete at[last];
  else at[last] = value;
}

/** What a control shows of a spec value: objects and absent values show empty. */
function shown(value: unknown): string {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? String(value) : '';
}

/** A text or choice field's value: the text, or nothing when blank (the setting's default). */
function textOf(value: string): unknown {
  return value === '' ? undefined : value;
}

/** A number field's value: a number when it reads as one, else the text as typed (so validation names the field). */
function numberOf(value: string): unknown {
  const trimmed = value.trim();
  if (trimmed === '') return undefined;
  return Number.isFinite(Number(trimmed)) ? Number(trimmed) : value;
}

/** A field alone; `parse` turns what was posted into the spec's value (by default: a number field's number, else the text). */
function scalar(field: Field, parse: (value: string) => unknown = field.control.kind === 'number' ? numberOf : textOf): Unit {
  return {
    fields: [field],
    read: (spec) => [shown(getPath(spec, field.name))],
    write: (spec, [value]) => setPath(spec, field.name, parse(value)),
  };
}

const text = (name: string, label: string, hint?: string): Unit => scalar({ name, label, hint, control: { kind: 'text' } });
const number = (name: string, label: string, min: number, max: number, hint?: string): Unit =>
  scalar({ name, label, hint, control: { kind: 'number', min, max } });
const choice = (name: string, label: string, values: readonly string[], fallback: string, hint?: string): Unit =>
  scalar({
    name,
    label,
    hint,
    control: { kind: 'choice', choices: [['', `Default (${fallback})`], ...values.map((v) => [v, v] as const)] },
  });

/** A true-or-false choice's value: a boolean when it reads as one, else the text as chosen (so validation names it). */
function booleanOf(value: string): unknown {
  if (value === '') return undefined;
  return value === 'true' ? true : value === 'false' ? false : value;
}

/**
 * A field of the `aggregation` block: set like any field, and the block goes when its last field is blanked, so a form
 * with every aggregation field blank saves a spec without one (judge and synthesis, as before).
 */
function inAggregation(unit: Unit): Unit {
  return {
    ...unit,
    write(spec, values) {
      unit.write(spec, values);
      if (isObj(spec.aggregation) && Object.keys(spec.aggregation).length === 0) delete spec.aggregation;
    },
  };
}

/** How the panel makes its one answer (issue 52): the `aggregation` block, each of its keys a field. */
function aggregationSection(): Section {
  const { prose, tie_break: tieBreak } = DEFAULTS.aggregation;
  const ballot = {
    kind: 'choice',
    choices: [
      ['', 'Default (on with vote)'],
      ['true', 'on'],
      ['false', 'off'],
    ],
  } as const;
  const firstWave = {
    kind: 'choice',
    choices: [
      ['', 'Default (every seat at once)'],
      ['2', '2 seats first'],
    ],
  } as const;
  return {
    legend: 'How the answer is made',
    slot: 'aggregation',
    units: [
      choice(
        'aggregation.method',
        'Aggregation',
        AGGREGATION_METHODS,
        'judge and synthesis',
        'synthesis: a synthesis writes the answer. select: the judge picks one seat, its text returned as written. vote: the seats’ answers are voted, the winner’s text returned as written.',
      ),
      choice(
        'aggregation.prose',
        'Prose',
        AGGREGATION_PROSE,
        prose,
        'pinned: a synthesis rewrites the chosen text, held to its answer (not with synthesis).',
      ),
      choice(
        'aggregation.tie_break',
        'Tie break',
        TIE_BREAKS,
        tieBreak,
        'Vote only: the judge chooses among the tied seats, or the first tied seat wins.',
      ),
      scalar(
        {
          name: 'aggregation.ballot',
          label: 'Ballot call',
          hint: 'Vote only: when no seat’s answer is readable, one short call reads them.',
          control: ballot,
        },
        booleanOf,
      ),
      scalar(
        {
          name: 'aggregation.first_wave',
          label: 'First wave',
          hint: 'Round 1 asks two seats, the third only when they disagree or one is unreadable. Not with a quorum.',
          control: firstWave,
        },
        numberOf,
      ),
    ].map(inAggregation),
  };
}

const NO_ENGINE = ['', '(none)'] as const;
const AUTO = 'auto';

/** A seat as its select shows it: the engine id, or `auto`. */
function seatValue(seat: unknown): string {
  if (typeof seat === 'string') return seat;
  if (isObj(seat)) return seat.auto === true ? AUTO : shown(seat.engine);
  return '';
}

/**
 * A row of seats: blank selects seat nobody (a row of all blanks is no row). A seat that had a backup or a tuning
 * (temperature, seed, system prompt) in the JSON keeps them when its engine is changed here; they are edited in the JSON.
 */
function seatRow(tier: Tier): Unit {
  const path = `seats_by_tier.${tier}`;
  const fields = Array.from({ length: ROW_SIZE[tier] }, (_, i) => ({
    name: `${path}.${i}`,
    label: tier === 'experience' ? 'Express seat' : `Seat ${i + 1}`,
    control: { kind: 'engine', upTo: tier, extra: tier === 'experience' ? [NO_ENGINE] : [NO_ENGINE, [AUTO, 'Auto-pick from the pool']] },
  })) satisfies Field[];
  const rowOf = (spec: Spec): unknown[] => {
    const row = getPath(spec, path);
    return Array.isArray(row) ? row : [];
  };
  return {
    fields,
    read: (spec) => fields.map((_, i) => seatValue(rowOf(spec)[i])),
    write(spec, values) {
      const before = rowOf(spec);
      const row = values.flatMap((value, i): unknown[] => {
        if (value === '') return [];
        if (value === AUTO) return [{ auto: true }];
        const old = before[i];
        return [isObj(old) && typeof old.engine === 'string' ? { ...old, engine: value } : value];
      });
      setPath(spec, path, row.length > 0 ? row : undefined);
      if (isObj(spec.seats_by_tier) && Object.keys(spec.seats_by_tier).length === 0) delete spec.seats_by_tier;
    },
  };
}

type StaffRole = 'judge' | 'synthesis' | 'classifier';

/** A staff entry: tier, engine and (except the classifier) backup; all blank is no entry. */
function staffEntry(role: StaffRole): Unit {
  const path = `staff.${role}`;
  const keys = role === 'classifier' ? (['tier', 'engine'] as const) : (['tier', 'engine', 'backup'] as const);
  const fields = keys.map((key): Field => ({
    name: `${path}.${key}`,
    label: key === 'tier' ? 'Tier' : key === 'engine' ? 'Engine' : 'Backup',
    control:
      key === 'tier'
        ? { kind: 'choice', choices: [['', '(none)'], ...TIERS.map((t) => [t, t] as const)] }
        : { kind: 'engine', upTo: 'pro', extra: [NO_ENGINE] },
  }));
  return {
    fields,
    read: (spec) => keys.map((key) => shown(getPath(spec, `${path}.${key}`))),
    write(spec, values) {
      const old = getPath(spec, path);
      const entry: Spec = isObj(old) ? { ...old } : {};
      keys.forEach((key, i) => {
        if (values[i] === '') delete entry[key];
        else entry[key] = values[i];
      });
      setPath(spec, path, Object.keys(entry).length > 0 ? entry : undefined);
    },
  };
}

/** The fees each Form charges: Form A per-depth and express surcharges, Form B a rate per 1M input tokens. */
function feeUnits(form: Form): Unit[] {
  if (form === 'B')
    return [number('fees.per_mtok_usd', 'Mode fee per 1M input tokens (USD)', 0, 1_000, 'Output tokens are charged at 4×.')];
  return [
    ...DEPTHS.map((d) => number(`fees.surcharge_by_depth_usd.${d}`, `Surcharge for a ${d} call (USD)`, 0, 1_000)),
    number('fees.express_surcharge_usd', 'Surcharge for an express call (USD)', 0, 1_000),
  ];
}

export function editorSections(form: Form): Section[] {
  return [
    {
      legend: 'About the mode',
      units: [
        text('name', 'Name', `Up to ${NAME_MAX} characters: letters, numbers, spaces and - ' & . ,`),
        text(
          'ticker',
          'Ticker',
          form === 'B' ? "Four letters A–Z, after your company's prefix." : 'Optional here: four letters A–Z (Form A names modes by id).',
        ),
        scalar({ name: 'description', label: 'Description', hint: `Up to ${DESCRIPTION_MAX} characters.`, control: { kind: 'textarea' } }),
        text('use_when', 'Use when', `One line, up to ${USE_WHEN_MAX} characters: when a caller should pick this mode.`),
      ],
    },
    {
      legend: 'How it deliberates',
      units: [
        number('rounds', 'Rounds', 1, 3, `Seat passes, 1 to 3 (default ${DEFAULTS.rounds}).`),
        choice('critique', 'Critique', CRITIQUE, DEFAULTS.critique),
        choice('grounding', 'Grounding', GROUNDING, DEFAULTS.grounding),
        choice('express', 'Express lane', EXPRESS, DEFAULTS.express),
        scalar(
          {
            name: 'skip_synthesis_when_converged',
            label: 'Skip the synthesis when the seats agree',
            hint: 'Leave at the default with an aggregation other than synthesis: it has no synthesis to skip.',
            control: {
              kind: 'choice',
              choices: [
                ['', `Default (${DEFAULTS.skip_synthesis_when_converged ? 'yes' : 'no'})`],
                ['true', 'yes'],
                ['false', 'no'],
              ],
            },
          },
          booleanOf,
        ),
        number('seat_max_output_tokens', 'Seat output limit (tokens)', 16, 32_000, `Default ${DEFAULTS.seat_max_output_tokens}.`),
        number(
          'quorum',
          'Quorum (seats)',
          2,
          ROW_SIZE.plus,
          'Blank: every round waits for every seat. Set: a round is judged once this many seats answered.',
        ),
        number(
          'grace_ms',
          'Grace for late seats (ms)',
          0,
          QUORUM_GRACE_MAX_MS,
          `With a quorum: default ${DEFAULTS.grace_ms} ms after its last answer.`,
        ),
      ],
    },
    aggregationSection(),
    {
      legend: 'Price',
      slot: 'fees',
      units: [
        ...feeUnits(form),
        number('ceiling_usd', 'Cost ceiling per call (USD)', 0, CEILING_MAX_USD, `Default $${DEFAULTS.ceiling_usd}.`),
      ],
    },
    {
      legend: 'Seats by tier',
      slot: 'seats_by_tier',
      units: [],
      sections: TIERS.map((tier) => ({
        legend: tier === 'experience' ? 'Experience: the express seat' : `${tier === 'plus' ? 'Plus' : 'Pro'} panel`,
        slot: `seats_by_tier.${tier}`,
        units: [seatRow(tier)],
      })),
    },
    {
      legend: 'Staff',
      slot: 'staff',
      units: [],
      sections: (['judge', 'synthesis', 'classifier'] as const).map((role) => ({
        legend: role === 'judge' ? 'Judge' : role === 'synthesis' ? 'Synthesis' : 'Classifier (optional)',
        slot: `staff.${role}`,
        units: [staffEntry(role)],
      })),
    },
  ];
}

function unitsOf(sections: readonly Section[]): Unit[] {
  return sections.flatMap((s) => [...s.units, ...unitsOf(s.sections ?? [])]);
}

/** The JSON textarea's own slot, for a JSON that does not parse. */
export const JSON_FIELD = 'spec_json';
export const BASE_FIELD = 'base_json';

/** The names of the form's fields, the JSON's among them. */
export function fieldNames(sections: readonly Section[]): Set<string> {
  return new Set([...unitsOf(sections).flatMap((u) => u.fields.map((f) => f.name)), JSON_FIELD]);
}

/** Every name a refusal can be shown beside: the fields and the sections' slots. */
export function slotNames(sections: readonly Section[]): Set<string> {
  const slots = (list: readonly Section[]): string[] => list.flatMap((s) => [...(s.slot ? [s.slot] : []), ...slots(s.sections ?? [])]);
  return new Set([...fieldNames(sections), ...slots(sections)]);
}

/** A refusal as the builder shows it: a validation refusal, or an error of the authoring core with its `param`. */
export interface Shown {
  code: string;
  message: string;
  path: string;
}

/**
 * Each refusal beside the nearest field or section its path names (`seats_by_tier.plus[0].backup` beside the
 * seat `seats_by_tier.plus.0`); the rest (no field: `auto.pool`, an unknown key, the whole spec) in the list at the top.
 */
export function placeRefusals(refusals: readonly Shown[], slots: ReadonlySet<string>): { at: Map<string, Shown[]>; unplaced: Shown[] } {
  const at = new Map<string, Shown[]>();
  const unplaced: Shown[] = [];
  for (const r of refusals) {
    const keys = r.path.replace(/\[(\d+)\]/g, '.$1').split('.');
    let slot: string | undefined;
    for (let n = keys.length; n > 0 && !slot; n--) {
      const candidate = keys.slice(0, n).join('.');
      if (slots.has(candidate)) slot = candidate;
    }
    if (slot) at.set(slot, [...(at.get(slot) ?? []), r]);
    else unplaced.push(r);
  }
  return { at, unplaced };
}

function parsedSpec(raw: unknown): Spec | undefined {
  if (typeof raw !== 'string') return undefined;
  try {
    const value: unknown = JSON.parse(raw);
    return isObj(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A posted field's value by its dotted name (the body parser nests dotted names: `fees.per_mtok_usd` arrives as
 * `{fees: {per_mtok_usd}}`); the last, if a field came twice; `undefined` when it was not posted.
 */
export function postedValue(body: Spec, name: string): string | undefined {
  const value = getPath(body, name);
  const last = Array.isArray(value) ? value[value.length - 1] : value;
  return typeof last === 'string' ? last : undefined;
}

/**
 * The spec a posted form stands for (see the file comment). An empty JSON leaves the fields to say it all; a JSON
 * that is not a spec object gives `refusal` (nothing may be saved) and the page's spec stands in for it.
 */
export function specFromFields(sections: readonly Section[], body: Spec): { spec: Spec; refusal?: Shown } {
  const base = parsedSpec(body[BASE_FIELD]) ?? {};
  const json = parsedSpec(body[JSON_FIELD]);
  const spec = structuredClone(json ?? base);
  for (const unit of unitsOf(sections)) {
    const posted = unit.fields.map((f) => postedValue(body, f.name));
    if (posted.some((v) => v === undefined)) continue;
    const values = posted as string[];
    const before = unit.read(base);
    if (values.some((v, i) => v !== before[i])) unit.write(spec, values);
  }
  const raw = body[JSON_FIELD];
  if (json || typeof raw !== 'string' || raw.trim() === '') return { spec };
  return {
    spec,
    refusal: {
      code: 'invalid_request',
      message: 'The JSON is not a spec object ({"name": …, …}); fix it, or clear it to keep what the fields say.',
      path: JSON_FIELD,
    },
  };
}

/** Whether a refusal (typed loosely, as it comes back in an error's detail) has the shape shown. */
export function isShown(x: unknown): x is Shown {
  return isObj(x) && typeof x.code === 'string' && typeof x.message === 'string' && typeof x.path === 'string';
}
