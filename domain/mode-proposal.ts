import { classifyHeuristic } from './classifier';
import { quote, tierRate, type CallStats, type Quote } from './estimate';
import type { Form } from './form';
import {
  CEILING_MAX_USD,
  DESCRIPTION_MAX,
  NAME_MAX,
  ROW_SIZE,
  USE_WHEN_MAX,
  validateMode,
  type PriceFloor,
  type SpecEngine,
  type ValidationContext,
} from './mode-spec';
import type { Refusal } from './mode-validation-codes';
import { microsToDecimal, microsToUsd } from './money';
import { DEPTHS, SYSTEM_MODES, TIER_RANK, TIERS, type Depth, type ModeConfig, type Tier } from './modes';
import { engineCostMicros, type TokenPrices } from './pricing';
import { isSimEngine } from './seat-assignment';

/**
 * `advisor_propose_mode`'s designer: a whole mode spec from a description, a budget and the engine list, with no model
 * call. A small keyword table turns the description into rounds, critique and the like; the seats are the dearest
 * engines that keep three makers in every panel row and a typical deep call within the budget; the staff come from the
 * makers holding the fewest seats; fees sit at the floor. The result is compiled with `validateMode` against the engine
 * list it was designed from, and priced with the estimate's own `quote`, so the proposal and its price never disagree
 * with a save or a call. Money is integer micro-dollars here.
 */

/** A catalog engine as the designer sees it. */
export interface ProposalEngine extends SpecEngine, TokenPrices {
  /** Whether it can run here now: a service key, one of the organisation's own keys, or a development stand-in. */
  usable: boolean;
}

export interface ProposalRequest {
  description: string;
  /** The most a typical deep panel call should cost the caller. */
  budgetMicros?: number;
  /** The highest tier the mode seats. */
  tier: Tier;
  engines: readonly ProposalEngine[];
  floor: PriceFloor;
  form: Form;
}

// Type aliases, not interfaces, so the spec passes as a JSON object at the edges.
type SeatSpec = {
  engine: string;
  backup?: string;
};

type StaffSpec = SeatSpec & { tier: Tier };

/** The spec the designer writes: the JSON `validateMode` reads. */
export type ProposedSpec = {
  name: string;
  ticker: string;
  description?: string;
  use_when: string;
  seats_by_tier: Partial<Record<Tier, SeatSpec[]>>;
  staff: { judge: StaffSpec; synthesis: StaffSpec };
  rounds: number;
  critique: ModeConfig['critique'];
  grounding: ModeConfig['grounding'];
  express: ModeConfig['express'];
  skip_synthesis_when_converged: boolean;
  seat_max_output_tokens: number;
  fees: { surcharge_by_depth_usd: Record<Depth, number>; express_surcharge_usd: number; per_mtok_usd: number };
  ceiling_usd?: number;
};

export interface ProposalPrice {
  /** The highest tier the mode seats: the tier a caller allowed everything pays. */
  tier: Tier;
  /** What a typical call costs the caller at each tier the mode seats, by depth (panel lane; express for experience). */
  byTier: Partial<Record<Tier, Record<Depth, number>>>;
  /** The prompt a typical call of each depth is priced with. */
  promptTokens: Readonly<Record<Depth, number>>;
  budgetMicros: number | null;
  /** Whether a deep call at every tier fits the budget (null without one). */
  withinBudget: boolean | null;
}

/** Why a tier's row (or the staff) cannot be filled. */
export interface Shortfall {
  tier: Tier;
  reason: string;
}

export type ProposalResult =
  | { ok: true; spec: ProposedSpec; rationale: string[]; price: ProposalPrice }
  | { ok: false; reason: 'too_few_engines'; shortfalls: Shortfall[] }
  | { ok: false; reason: 'invalid'; refusals: Refusal[] };

/** Prompt sizes a typical call of each depth is priced with (a quote needs one; the estimate counts the real prompt). */
export const TYPICAL_PROMPT_TOKENS: Readonly<Record<Depth, number>> = { light: 150, medium: 500, deep: 1_500 };
/** Judge and synthesis sit at plus, as the platform modes' do: the lowest tier staff may sit at. */
const STAFF_TIER: Tier = 'plus';
/** Room for prompts longer than the typical one, while still capping a runaway call. */
const CEILING_HEADROOM = 2;
const NAME_WORDS = 3;
const CENT_MICROS = 10_000;
/** A new mode has no recorded calls: its configured fee rate prices it. */
const NO_CALLS: CallStats = { n: 0, inputTokens: 0, outputTokens: 0, modeFeeMicros: 0 };
/** The quote reads only depth and lane of a classification; the rest is an empty prompt's. */
const BLANK = classifyHeuristic([{ role: 'user', content: '' }]);

type Settings = Pick<ModeConfig, 'rounds' | 'critique' | 'grounding' | 'express' | 'skipSynthesisWhenConverged' | 'seatMaxOutputTokens'>;

/** The platform's general panel's settings, for a description that asks for nothing in particular. */
const GENERAL: Settings = (({ rounds, critique, grounding, express, skipSynthesisWhenConverged, seatMaxOutputTokens }) => ({
  rounds,
  critique,
  grounding,
  express,
  skipSynthesisWhenConverged,
  seatMaxOutputTokens,
}))((SYSTEM_MODES.find((m) => m.id === 'quorum-panel') as (typeof SYSTEM_MODES)[number]).config);

interface Trait {
  asks: string;
  words: RegExp;
  sets: Partial<Settings>;
}

/** What a description can ask for, in priority order: the first trait that sets a field decides it. */
const TRAITS: readonly Trait[] = [
  {
    asks: 'hard reasoning',
    words:
      /\b(maths?|mathematics|proofs?|prove|theorems?|logic|reasoning|puzzles?|code|coding|programming|debug\w*|algorithms?|rigorous|hard|difficult|complex)\b/i,
    sets: { rounds: 3, critique: 'always', express: 'never', skipSynthesisWhenConverged: false, seatMaxOutputTokens: 2_048 },
  },
  {
    asks: 'care on high stakes',
    words: /\b(legal|medical|health|financ\w*|safety|high[- ]stakes|accura(te|cy)|critical)\b/i,
    sets: { rounds: 3, critique: 'always', express: 'never', skipSynthesisWhenConverged: false },
  },
  {
    asks: 'quick or cheap answers',
    words: /\b(quick\w*|fast|cheap\w*|low[- ]cost|inexpensive|simple|short|brief|casual|chat\w*|everyday)\b/i,
    sets: { rounds: 1, critique: 'never', express: 'auto', seatMaxOutputTokens: 512 },
  },
  {
    asks: 'contested judgement',
    words: /\b(debat\w*|contested|controvers\w*|opinions?|perspectives?|ethic\w*|polic(y|ies)|strateg\w*|decisions?|advice)\b/i,
    sets: { rounds: 2, critique: 'always', skipSynthesisWhenConverged: false },
  },
  {
    asks: 'current facts',
    words: /\b(news|latest|current|recent|today|facts?|factual|citations?|sources?)\b/i,
    sets: { grounding: 'auto' },
  },
  {
    asks: 'creative writing',
    words: /\b(creative|stor(y|ies)|poems?|poetry|fiction|brainstorm\w*|slogans?|copywriting)\b/i,
    sets: { grounding: 'off' },
  },
];

/** A caller allowed only the experience tier gets the express seat alone. */
const EXPRESS_ONLY: Partial<Settings> = { rounds: 1, critique: 'never', express: 'always' };

const SETTING_TEXT: { readonly [K in keyof Settings]: (s: Settings) => string } = {
  rounds: (s) => `${s.rounds} round${s.rounds === 1 ? '' : 's'}`,
  critique: (s) => ({ always: 'critique every round', when_split: 'critique only when the seats split', never: 'no critique' })[s.critique],
  grounding: (s) => (s.grounding === 'auto' ? 'web grounding when a prompt needs it' : 'no web grounding'),
  express: (s) =>
    ({ auto: 'easy prompts may take the express seat', always: 'every call on the express seat', never: 'never the express lane' })[
      s.express
    ],
  skipSynthesisWhenConverged: (s) => (s.skipSynthesisWhenConverged ? 'no synthesis when the seats agree' : 'a synthesis every time'),
  seatMaxOutputTokens: (s) => `${s.seatMaxOutputTokens} output tokens per seat`,
};

const STOP_WORDS = new Set(
  (
    'a an the and or but for of to in on at by with from about into as that this these those which who whom what when where ' +
    'how why is are be been it its my our your their we you they me us mode modes panel model models answer answers ' +
    'question questions need needs want wants should can could will would please some any all very more most so also not no'
  ).split(' '),
);

const keysOf = <T extends object>(o: T): (keyof T)[] => Object.keys(o) as (keyof T)[];
const usd = (micros: number): string => `$${microsToDecimal(BigInt(micros))}`;
const list = (items: readonly string[]): string =>
  items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;

/** Settings from the description's words, with a sentence for each trait that decided something. */
function settingsFor(description: string, expressOnly: boolean): { settings: Settings; why: string[] } {
  const matched = TRAITS.flatMap((trait) => {
    const word = trait.words.exec(description)?.[0];
    return word ? [{ trait, word }] : [];
  });
  const traits = matched.reduceRight<Settings>((s, m) => ({ ...s, ...m.trait.sets }), { ...GENERAL });
  const settings = expressOnly ? { ...traits, ...EXPRESS_ONLY } : traits;
  const decided = new Set<keyof Settings>(expressOnly ? keysOf(EXPRESS_ONLY) : []);
  const describe = (fields: (keyof Settings)[]): string => fields.map((f) => SETTING_TEXT[f](settings)).join(', ');
  const why = expressOnly
    ? [`Only the experience tier is allowed, so the mode is its express seat alone: ${describe(keysOf(EXPRESS_ONLY))}.`]
    : [];
  for (const { trait, word } of matched) {
    const fields = keysOf(trait.sets).filter((f) => !decided.has(f));
    fields.forEach((f) => decided.add(f));
    if (fields.length > 0) why.push(`The description asks for ${trait.asks} ("${word}"): ${describe(fields)}.`);
  }
  if (matched.length === 0)
    why.push(`The description asks for nothing in particular, so the general design: ${describe(keysOf(GENERAL))}.`);
  return { settings, why };
}

/** Text without `<`, `>` or control characters, on one line. */
function plainText(text: string): string {
  return text
    .replace(/[<>\p{Cc}]/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/** At most `max` characters, cut at a word and marked. */
function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max - 1);
  const space = cut.lastIndexOf(' ');
  return `${(space > max / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

interface Identity {
  name: string;
  ticker: string;
  description?: string;
  useWhen: string;
}

/** A name from the description's first telling words (letters and numbers only, so always a valid name), its ticker, and texts. */
function identityOf(description: string, expressOnly: boolean): Identity {
  const words = (description.match(/[\p{L}\p{N}]+/gu) ?? []).filter(
    // "Quorum…" names are reserved.
    (w) => w.length > 1 && !STOP_WORDS.has(w.toLowerCase()) && !/^quorum/i.test(w),
  );
  const suffix = expressOnly ? 'Express' : 'Panel';
  const picked = (words.length > 0 ? words : ['Proposed'])
    .slice(0, NAME_WORDS)
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1, NAME_MAX - suffix.length - 1));
  while ([...picked, suffix].join(' ').length > NAME_MAX) picked.pop();
  const name = [...picked, suffix].join(' ');
  const plain = plainText(description);
  const firstSentence = plain.split(/(?<=[.!?])\s/)[0];
  return {
    name,
    ticker: tickerOf(name),
    ...(plain ? { description: clip(plain, DESCRIPTION_MAX) } : {}),
    useWhen: clip(firstSentence || 'Questions that gain from several makers answering and a judge.', USE_WHEN_MAX),
  };
}

/** Four letters A–Z: the name's initials, then the rest of its letters, then X. */
function tickerOf(name: string): string {
  const words = name
    .split(' ')
    .map((w) =>
      w
        .normalize('NFKD')
        .replace(/[^A-Za-z]/g, '')
        .toUpperCase(),
    )
    .filter(Boolean);
  return (words.map((w) => w[0]).join('') + words.map((w) => w.slice(1)).join('') + 'XXXX').slice(0, 4);
}

/** What one seat call of a deep prompt costs on `e`: how engines are ranked from dearest to cheapest. */
function seatCallMicros(e: TokenPrices): number {
  return engineCostMicros(TYPICAL_PROMPT_TOKENS.deep, GENERAL.seatMaxOutputTokens, e);
}

/** Every row of `size` engines from different makers, in the order of `engines`. */
function distinctMakerRows(engines: readonly ProposalEngine[], size: number): ProposalEngine[][] {
  if (size === 0) return [[]];
  return engines.flatMap((e, i) =>
    distinctMakerRows(
      engines.slice(i + 1).filter((o) => o.maker !== e.maker),
      size - 1,
    ).map((rest) => [e, ...rest]),
  );
}

function product<T>(choices: readonly (readonly T[])[]): T[][] {
  return choices.reduce<T[][]>((acc, options) => acc.flatMap((picked) => options.map((o) => [...picked, o])), [[]]);
}

function shortfall(tier: Tier, all: readonly ProposalEngine[]): Shortfall {
  const real = all.filter((e) => e.tier === tier && !isSimEngine(e.id));
  const usable = real.filter((e) => e.usable);
  const makers = [...new Set(usable.map((e) => e.maker))].sort();
  const need = ROW_SIZE[tier] === 1 ? 'one engine' : `${ROW_SIZE[tier]} engines from different makers`;
  return {
    tier,
    reason: `${usable.length} of the ${real.length} ${tier} engines can run here (makers: ${makers.join(', ') || 'none'}); the ${tier} row needs ${need}.`,
  };
}

interface Row {
  tier: Tier;
  seats: ProposalEngine[];
  backups: (ProposalEngine | undefined)[];
}

interface Design {
  rows: Row[];
  judge: ProposalEngine;
  synthesis: ProposalEngine;
  /** Panel seats per maker: what the staff is chosen against. */
  seatsOf(maker: string): number;
}

/** Each seat backs up to a spare engine of its tier, of another maker when there is one, so a failure keeps the row diverse. */
function withBackups(tier: Tier, seats: ProposalEngine[], tierEngines: readonly ProposalEngine[]): Row {
  const makers = new Set(seats.map((s) => s.maker));
  const spares = tierEngines.filter((e) => !seats.includes(e));
  const otherMakers = spares.filter((e) => !makers.has(e.maker));
  const pool = otherMakers.length > 0 ? otherMakers : spares;
  return { tier, seats, backups: seats.map((_, i) => (pool.length > 0 ? pool[i % pool.length] : undefined)) };
}

/** Staff from the makers holding the fewest panel seats (dearest first among those), judge and synthesis of two makers. */
function designOf(tiers: readonly Tier[], seats: ProposalEngine[][], engines: readonly ProposalEngine[]): Design {
  const rows = tiers.map((tier, i) =>
    withBackups(
      tier,
      seats[i],
      engines.filter((e) => e.tier === tier),
    ),
  );
  const panelSeats = rows.filter((r) => r.tier !== 'experience').flatMap((r) => r.seats);
  const seatsOf = (maker: string): number => panelSeats.filter((s) => s.maker === maker).length;
  const staff = engines.filter((e) => e.tier === STAFF_TIER).sort((a, b) => seatsOf(a.maker) - seatsOf(b.maker));
  const judge = staff[0];
  const synthesis = staff.find((e) => e.maker !== judge.maker) ?? staff.find((e) => e !== judge) ?? judge;
  return { rows, judge, synthesis, seatsOf };
}

function specOf(identity: Identity, settings: Settings, design: Design, floor: PriceFloor, ceilingMicros?: number): ProposedSpec {
  const staffEntry = (engine: ProposalEngine, backup: ProposalEngine): StaffSpec => ({
    tier: STAFF_TIER,
    engine: engine.id,
    ...(backup !== engine ? { backup: backup.id } : {}),
  });
  return {
    name: identity.name,
    ticker: identity.ticker,
    ...(identity.description ? { description: identity.description } : {}),
    use_when: identity.useWhen,
    seats_by_tier: Object.fromEntries(
      design.rows.map((r) => [r.tier, r.seats.map((s, i) => ({ engine: s.id, ...(r.backups[i] ? { backup: r.backups[i].id } : {}) }))]),
    ),
    staff: { judge: staffEntry(design.judge, design.synthesis), synthesis: staffEntry(design.synthesis, design.judge) },
    rounds: settings.rounds,
    critique: settings.critique,
    grounding: settings.grounding,
    express: settings.express,
    skip_synthesis_when_converged: settings.skipSynthesisWhenConverged,
    seat_max_output_tokens: settings.seatMaxOutputTokens,
    fees: {
      surcharge_by_depth_usd: { light: floor.surchargeUsd, medium: floor.surchargeUsd, deep: floor.surchargeUsd },
      express_surcharge_usd: floor.surchargeUsd,
      per_mtok_usd: floor.perMtokUsd,
    },
    ...(ceilingMicros !== undefined ? { ceiling_usd: microsToUsd(BigInt(ceilingMicros)) } : {}),
  };
}

/** The rules a save runs, over the engine list the design came from (the authoring layer checks again against its own). */
export function proposalContext(req: ProposalRequest): ValidationContext {
  const byId = new Map(req.engines.map((e) => [e.id, e]));
  return {
    form: req.form,
    find: (id) => byId.get(id),
    canRun: (id) => byId.get(id)?.usable === true,
    floor: req.floor,
    via: 'key',
    hasOrg: true,
    system: false,
    tickerTaken: () => false,
  };
}

type Priced = Map<Tier, Record<Depth, Quote>>;

/** A typical panel call at each tier and depth (the experience tier always takes the express lane). */
function priceOf(config: ModeConfig, req: ProposalRequest): Priced | undefined {
  const byId = new Map(req.engines.map((e) => [e.id, e]));
  const priced: Priced = new Map();
  for (const tier of TIERS.filter((t) => config.tiers[t] !== undefined)) {
    const byDepth: Partial<Record<Depth, Quote>> = {};
    for (const depth of DEPTHS) {
      const q = quote(
        {
          form: req.form,
          config,
          tier,
          classification: { ...BLANK, depth, lane: 'panel' },
          promptTokens: TYPICAL_PROMPT_TOKENS[depth],
          rate: tierRate(config, NO_CALLS),
          keyCeilingMicros: undefined,
          requestedCeilingMicros: undefined,
        },
        (id) => byId.get(id),
      );
      if (!q) return undefined;
      byDepth[depth] = q;
    }
    priced.set(tier, byDepth as Record<Depth, Quote>);
  }
  return priced;
}

interface Candidate {
  design: Design;
  /** A deep call at the dearest tier, staff included, before any ceiling: what the budget bounds. */
  costMicros: number;
  costTier: Tier;
  /** The seats' own price: dearer seats are preferred, whatever staff they bring. */
  seatMicros: number;
}

/** Compiles a spec and prices it; the refusals when it does not pass. */
function compileAndPrice(spec: ProposedSpec, req: ProposalRequest): { priced: Priced } | { refusals: Refusal[] } {
  const checked = validateMode(spec, proposalContext(req));
  if (!checked.ok) return { refusals: checked.refusals };
  const priced = priceOf(checked.mode.config, req);
  // Every engine of the list has prices, so this only guards the type.
  return priced ? { priced } : { refusals: [] };
}

/** Designs a mode for the request: its spec, why each choice, and its price; or why it cannot. */
export function designMode(req: ProposalRequest): ProposalResult {
  const engines = req.engines
    .filter((e) => e.usable && !isSimEngine(e.id))
    .sort((a, b) => seatCallMicros(b) - seatCallMicros(a) || a.id.localeCompare(b.id));
  const tiers = TIERS.filter((t) => TIER_RANK[t] <= TIER_RANK[req.tier]);
  const choices = tiers.map((t) =>
    distinctMakerRows(
      engines.filter((e) => e.tier === t),
      ROW_SIZE[t],
    ),
  );
  const shortfalls = tiers.filter((_, i) => choices[i].length === 0).map((t) => shortfall(t, req.engines));
  if (!tiers.includes(STAFF_TIER) && !engines.some((e) => e.tier === STAFF_TIER))
    shortfalls.push({
      tier: STAFF_TIER,
      reason: `The judge and synthesis sit at ${STAFF_TIER}, and no ${STAFF_TIER} engine can run here.`,
    });
  if (shortfalls.length > 0) return { ok: false, reason: 'too_few_engines', shortfalls };

  const expressOnly = !tiers.some((t) => t !== 'experience');
  const { settings, why } = settingsFor(req.description, expressOnly);
  const identity = identityOf(req.description, expressOnly);

  // Every combination of rows is priced whole (the staff depend on all rows' makers); a catalog has a few engines per tier.
  const candidates: Candidate[] = [];
  for (const seats of product(choices)) {
    const design = designOf(tiers, seats, engines);
    const result = compileAndPrice(specOf(identity, settings, design, req.floor), req);
    if ('refusals' in result) return { ok: false, reason: 'invalid', refusals: result.refusals };
    const dearest = [...result.priced]
      .map(([tier, q]) => ({ tier, micros: q.deep.grossMicros }))
      .reduce((a, b) => (b.micros > a.micros ? b : a));
    const seatMicros = seats.flat().reduce((sum, e) => sum + seatCallMicros(e), 0);
    candidates.push({ design, costMicros: dearest.micros, costTier: dearest.tier, seatMicros });
  }
  candidates.sort((a, b) => b.seatMicros - a.seatMicros || b.costMicros - a.costMicros);
  const budget = req.budgetMicros;
  const fitting = budget === undefined ? candidates[0] : candidates.find((c) => c.costMicros <= budget);
  const cheapest = [...candidates].sort((a, b) => a.costMicros - b.costMicros || a.seatMicros - b.seatMicros)[0];
  const chosen = fitting ?? cheapest;

  const headroom = Math.ceil((CEILING_HEADROOM * chosen.costMicros) / CENT_MICROS) * CENT_MICROS;
  const ceilingMicros = Math.min(headroom, CEILING_MAX_USD * 1_000_000, budget !== undefined && fitting ? budget : Infinity);
  const spec = specOf(identity, settings, chosen.design, req.floor, ceilingMicros);
  const final = compileAndPrice(spec, req);
  if ('refusals' in final) return { ok: false, reason: 'invalid', refusals: final.refusals };

  const byTier = Object.fromEntries(
    [...final.priced].map(([tier, q]) => [tier, Object.fromEntries(DEPTHS.map((d) => [d, q[d].totalMicros])) as Record<Depth, number>]),
  );
  return {
    ok: true,
    spec,
    rationale: [
      ...why,
      ...rowsRationale(chosen.design, req.tier),
      staffRationale(chosen.design, expressOnly),
      budgetRationale(chosen, candidates[0], budget, fitting !== undefined),
      `The ceiling is ${usd(ceilingMicros)} a call: ${budget !== undefined && fitting && ceilingMicros === budget ? 'your budget' : `about ${CEILING_HEADROOM}× a typical deep call`}.`,
      req.form === 'B'
        ? `The fee sits at the price floor, ${usd(Math.round(req.floor.perMtokUsd * 1_000_000))} per 1M input tokens (output 4×): raise it before listing for a margin.`
        : `The surcharges sit at the price floor, ${usd(Math.round(req.floor.surchargeUsd * 1_000_000))} a call: raise them before listing for a margin.`,
    ],
    price: {
      tier: tiers[tiers.length - 1],
      byTier,
      promptTokens: TYPICAL_PROMPT_TOKENS,
      budgetMicros: budget ?? null,
      withinBudget: budget === undefined ? null : fitting !== undefined,
    },
  };
}

function rowsRationale(design: Design, allowed: Tier): string[] {
  const backups = (r: Row): string => {
    const ids = [...new Set(r.backups.flatMap((b) => (b ? [b.id] : [])))];
    return ids.length > 0 ? `backed up by ${list(ids)}` : `with no spare ${r.tier} engine to back up to (the catalog's own backups apply)`;
  };
  return [
    `Rows for ${list(design.rows.map((r) => r.tier))}: every tier up to ${allowed}, each seating engines of its own tier.`,
    ...design.rows.map((r) =>
      r.tier === 'experience'
        ? `The express seat is ${r.seats[0].id}, ${backups(r)}.`
        : `The ${r.tier} row seats ${list(r.seats.map((s) => s.id))}: three makers (${list(r.seats.map((s) => s.maker))}), ${backups(r)}.`,
    ),
  ];
}

function staffRationale(design: Design, expressOnly: boolean): string {
  const { judge, synthesis, seatsOf } = design;
  if (expressOnly)
    return `The judge is ${judge.id} and the synthesis ${synthesis.id}: a mode names its staff, though the express seat never calls them.`;
  const panel = design.rows.filter((r) => r.tier !== 'experience').length * ROW_SIZE.plus;
  return (
    `The judge is ${judge.id} (${judge.maker}, ${seatsOf(judge.maker)} of the ${panel} panel seats) and the synthesis ${synthesis.id} ` +
    `(${synthesis.maker}, ${seatsOf(synthesis.maker)}): staff from the makers with the fewest seats rarely judge their own family's answers.`
  );
}

function budgetRationale(chosen: Candidate, dearest: Candidate, budget: number | undefined, fits: boolean): string {
  const cost = `a typical deep call at ${chosen.costTier} costs about ${usd(chosen.costMicros)}`;
  if (budget === undefined) return `No budget was given, so the dearest engines the rules allow: ${cost}.`;
  if (!fits) return `No design fits a budget of ${usd(budget)}: this is the cheapest, and ${cost}.`;
  return chosen === dearest
    ? `The dearest design fits the budget of ${usd(budget)}: ${cost}.`
    : `The dearest design would cost about ${usd(dearest.costMicros)} a deep call, over the budget of ${usd(budget)}, so cheaper engines sit here: ${cost}.`;
}
