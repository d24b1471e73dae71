import { z } from 'zod';
import type { Form } from './form';
import { VALIDATION_CODES, type Refusal, type ValidationCode } from './mode-validation-codes';
import { canonicalJson } from './canonical-json';
import {
  AGGREGATION_METHODS,
  AGGREGATION_PROSE,
  DEPTHS,
  QUORUM_GRACE_MAX_MS,
  SEAT_SYSTEM_PROMPT_MAX,
  TIER_RANK,
  TIE_BREAKS,
  TIERS,
  type Aggregation,
  type ModeConfig,
  type Quorum,
  type SeatTuning,
  type Tier,
} from './modes';
import { isStorableText } from './storable-text';

/**
 * The mode spec an author writes (JSON): what the builder, the CLI and the MCP tools save. `validateMode` checks it
 * against every rule of `mode-validation-codes.ts` and returns *every* refusal; a spec with none compiles to the
 * stored `ModeConfig` that deliberations run, so authored modes deliberate exactly as the system modes do.
 *
 * The checks walk the raw JSON rather than parse it with zod: each wrong shape has its own code and path (a
 * `seats_by_tier` that is not an object of rows is `seats_by_tier_invalid`, not a generic parse error).
 * `ModeSpecDocSchema` below documents the same shape as JSON Schema for builders and agents.
 */

/** What validation needs to know of a catalog engine. */
export interface SpecEngine {
  id: string;
  tier: Tier;
  family: string;
  /**
   * The wire protocol, which says what a seat may tune (a seed only where the protocol takes one), and whether it is
   * a reasoning model (no temperature). Absent where the caller has no catalog entry (the advisor's proposals, which
   * tune no seat).
   */
  protocol?: string;
  reasoning?: boolean;
  /** Who made the model: family diversity counts makers (a Llama on Bedrock is not Anthropic). */
  maker: string;
}

/** Protocols whose request takes a sampling seed (OpenAI's and llama.cpp's `seed`, Gemini's `generationConfig.seed`; sim's hash). */
const SEEDED_PROTOCOLS = ['openai', 'google', 'sim'];

/** The lowest fees the price slider offers; fees default to it. */
export interface PriceFloor {
  /** Form B: the mode's fee per 1M input tokens. */
  perMtokUsd: number;
  /** Form A: each per-depth surcharge and the express surcharge. */
  surchargeUsd: number;
}

export interface ValidationContext {
  form: Form;
  find(engineId: string): SpecEngine | undefined;
  /** Whether the engine can run here now: a service key, one of the organisation's own keys, or a development stand-in. */
  canRun(engineId: string): boolean;
  floor: PriceFloor;
  /** Who saves: only a person in the builder (`person`) may acknowledge a price override. */
  via: 'key' | 'person' | 'operator';
  hasOrg: boolean;
  /** Authoring a platform (system) mode: an operator only. */
  system: boolean;
  /** The tiers the stored platform mode serves, when the save replaces one. */
  storedSystemTiers?: readonly Tier[];
  /** Whether the four-letter mode part is another mode's ticker in the author's company (the mode being saved excluded). */
  tickerTaken(modePart: string): boolean;
}

/** A spec that passed, compiled: what a draft stores beside the spec. */
export interface CompiledMode {
  name: string;
  /** The four-letter mode part of the ticker, when the spec gives one (Form B always does). */
  ticker: string | undefined;
  description: string | null;
  useWhen: string;
  config: ModeConfig;
}

export type Validation = { ok: true; refusals: []; mode: CompiledMode } | { ok: false; refusals: Refusal[] };

const TOP_LEVEL = [
  'name',
  'ticker',
  'description',
  'use_when',
  'min_tier',
  'seats',
  'tier',
  'seats_by_tier',
  'auto',
  'staff',
  'rounds',
  'critique',
  'grounding',
  'express',
  'skip_synthesis_when_converged',
  'seat_max_output_tokens',
  'fees',
  'ceiling_usd',
  'quorum',
  'grace_ms',
  'aggregation',
  'fidelity',
  'api_commercial',
] as const;
export const CRITIQUE = ['always', 'when_split', 'never'] as const;
export const GROUNDING = ['auto', 'off'] as const;
export const EXPRESS = ['auto', 'always', 'never'] as const;
const DIVERSITY = ['distinct', 'any'] as const;
const STAFF_ROLES = ['judge', 'synthesis', 'classifier'] as const;
const RETIRED_FIDELITY = ['high', 'max'];
const RESERVED_NAMES = ['system', 'admin', 'official', 'lab'];
const NAME_MIN = 3;
export const NAME_MAX = 60;
export const DESCRIPTION_MAX = 500;
export const USE_WHEN_MAX = 200;
export const CEILING_MAX_USD = 100;
/** Seats a row holds: the express seat alone, or a panel of three. */
export const ROW_SIZE: Readonly<Record<Tier, number>> = { experience: 1, plus: 3, pro: 3 };
/** What a spec that leaves a setting out gets. */
export const DEFAULTS = {
  rounds: 2,
  critique: 'when_split',
  grounding: 'auto',
  express: 'auto',
  skip_synthesis_when_converged: true,
  seat_max_output_tokens: 1_024,
  ceiling_usd: 1,
  /** With a `quorum`: how long the seats still out may take once the quorum has answered. */
  grace_ms: 2_000,
  /**
   * With an `aggregation`: the chosen seat's text as written, the judge breaking a tie of the vote, and the ballot call
   * on for a vote (a method other than vote takes no ballot).
   */
  aggregation: { prose: 'verbatim', tie_break: 'judge', ballot: true },
} as const;

type Json = Record<string, unknown>;
const isObj = (x: unknown): x is Json => typeof x === 'object' && x !== null && !Array.isArray(x);
const isTier = (x: unknown): x is Tier => typeof x === 'string' && (TIERS as readonly string[]).includes(x);
const oneOf = <T extends string>(values: readonly T[], x: unknown): x is T =>
  typeof x === 'string' && (values as readonly string[]).includes(x);
/** `<`, `>`, or a control character other than tab and newlines. */
const BAD_TEXT = /[<>]|[^\P{Cc}\t\n\r]/u;
const usdMicros = (usd: number): number => Math.round(usd * 1_000_000);

type Seat =
  { kind: 'fixed'; engine: string; backup?: string; tuning?: SeatTuning; path: string } | { kind: 'auto'; backup?: unknown; path: string };

class Refusals {
  readonly list: Refusal[] = [];
  add(code: ValidationCode, path: string, message: string, extra: Pick<Refusal, 'tiers' | 'suggested_ticker'> = {}): void {
    this.list.push({ code, message, path, ...extra });
  }
}

/** Checks `spec` against every rule; on success also compiles it. */
export function validateMode(spec: unknown, ctx: ValidationContext): Validation {
  const r = new Refusals();
  if (!isObj(spec)) {
    r.add('invalid_request', '', 'A mode spec is a JSON object; `quorum mode template` prints one to start from.');
    return { ok: false, refusals: r.list };
  }
  // Listed first (spec 02): the one refusal a builder's own field causes.
  const commercial = spec.api_commercial;
  if (isObj(commercial) && commercial.price_override_acknowledged !== undefined && ctx.via !== 'person') {
    r.add(
      'price_override_not_allowed',
      'api_commercial.price_override_acknowledged',
      'Only a person in the builder acknowledges a price override; a key sets any price at or above the floor without it. Drop the field.',
    );
  } else if (commercial !== undefined && !isObj(commercial)) {
    r.add('invalid_request', 'api_commercial', '`api_commercial` is an object.');
  }
  for (const key of Object.keys(spec)) {
    if (!(TOP_LEVEL as readonly string[]).includes(key))
      r.add('invalid_request', key, `Unknown field \`${key}\`; the spec's fields are ${TOP_LEVEL.join(', ')}.`);
  }
  if (!ctx.hasOrg) r.add('org_required', '', 'A mode belongs to an organisation; create or join one first.');

  const name = checkName(spec.name, r);
  const description = checkDescription(spec.description, r);
  const useWhen = checkUseWhen(spec.use_when, r);
  const ticker = checkTicker(spec.ticker, ctx, r);
  const rows = checkSeats(spec, ctx, r);
  const staff = checkStaff(spec.staff, ctx, r);
  const settings = checkSettings(spec, ctx, r);
  if (rows && staff) checkStaffAgainstRows(rows, staff, r);
  if (rows && settings) checkPanelShape(rows, settings, r);

  if (r.list.length > 0 || !rows || !staff || !settings || name === undefined) return { ok: false, refusals: r.list };
  return {
    ok: true,
    refusals: [],
    mode: { name, ticker, description, useWhen, config: compile(rows, staff, settings, ctx) },
  };
}

function checkName(value: unknown, r: Refusals): string | undefined {
  if (typeof value !== 'string') {
    r.add('invalid_request', 'name', 'A mode needs a `name` (text).');
    return undefined;
  }
  const name = value.trim();
  if (name.length < NAME_MIN) r.add('name_too_short', 'name', `A name has at least ${NAME_MIN} characters.`);
  if (name.length > NAME_MAX) r.add('name_too_long', 'name', `A name has at most ${NAME_MAX} characters.`);
  if (!/^[\p{L}\p{N} \-'&.,]*$/u.test(name)) r.add('name_bad_chars', 'name', "A name uses only letters, numbers, spaces and - ' & . ,");
  else if (name.length > 0 && !/^[\p{L}\p{N}].*[\p{L}\p{N}]$|^[\p{L}\p{N}]$/u.test(name))
    r.add('name_edge_punctuation', 'name', 'A name starts and ends with a letter or number.');
  if (/^quorum/i.test(name) || RESERVED_NAMES.includes(name.toLowerCase()))
    r.add('name_reserved', 'name', `"${name}" is reserved: names may not start with "Quorum" or be ${RESERVED_NAMES.join(', ')}.`);
  return name;
}

function checkDescription(value: unknown, r: Refusals): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') {
    r.add('invalid_request', 'description', '`description` is text.');
    return null;
  }
  if (value.length > DESCRIPTION_MAX)
    r.add('description_too_long', 'description', `A description is at most ${DESCRIPTION_MAX} characters.`);
  if (BAD_TEXT.test(value)) r.add('description_bad_chars', 'description', 'A description has no `<`, `>` or control character.');
  return value;
}

function checkUseWhen(value: unknown, r: Refusals): string {
  if (value === undefined) return '';
  if (typeof value !== 'string' || value.trim() === '' || BAD_TEXT.test(value)) {
    r.add(
      'use_when_invalid',
      'use_when',
      '`use_when` is one line of text saying when to pick this mode, without `<`, `>` or control characters.',
    );
    return '';
  }
  if (value.length > USE_WHEN_MAX) r.add('use_when_too_long', 'use_when', `\`use_when\` is at most ${USE_WHEN_MAX} characters.`);
  return value;
}

function checkTicker(value: unknown, ctx: ValidationContext, r: Refusals): string | undefined {
  if (value === undefined || value === null) {
    if (ctx.form === 'B') r.add('ticker_required', 'ticker', 'Form B names modes by ticker: give the four-letter mode part, e.g. "PANL".');
    return undefined;
  }
  if (typeof value !== 'string' || !/^[A-Z]{4}$/.test(value)) {
    r.add('ticker_invalid', 'ticker', 'A ticker is exactly four letters A to Z (the part after `COMPANY:`).');
    return undefined;
  }
  if (ctx.tickerTaken(value)) {
    const suggestion = suggestTicker(value, ctx.tickerTaken);
    r.add('ticker_taken', 'ticker', `Another of your modes has the ticker ${value}${suggestion ? `; ${suggestion} is free` : ''}.`, {
      ...(suggestion ? { suggested_ticker: suggestion } : {}),
    });
  }
  return value;
}

/** The nearest free ticker: the same letters with the last one, then the last two, stepped through the alphabet. */
export function suggestTicker(ticker: string, taken: (t: string) => boolean): string | undefined {
  const A = 'A'.charCodeAt(0);
  for (let n = 1; n < 26 * 26; n++) {
    const last = (ticker.charCodeAt(3) - A + n) % 26;
    const third = (ticker.charCodeAt(2) - A + Math.floor(n / 26)) % 26;
    const candidate = ticker.slice(0, 2) + String.fromCharCode(A + third) + String.fromCharCode(A + last);
    if (candidate !== ticker && !taken(candidate)) return candidate;
  }
  return undefined;
}

const SEAT_KEYS = ['engine', 'backup', 'temperature', 'seed', 'system_prompt'];

function parseSeat(entry: unknown, path: string, r: Refusals): Seat | undefined {
  if (typeof entry === 'string') return { kind: 'fixed', engine: entry, path };
  if (isObj(entry) && entry.auto === true) {
    const extra = Object.keys(entry).find((k) => !['auto', 'backup'].includes(k));
    if (extra) r.add('invalid_request', `${path}.${extra}`, `An auto seat takes \`auto\` only (and no \`${extra}\`): tune a fixed seat.`);
    return { kind: 'auto', backup: entry.backup, path };
  }
  if (isObj(entry) && typeof entry.engine === 'string' && (entry.backup === undefined || typeof entry.backup === 'string')) {
    const unknown = Object.keys(entry).find((k) => !SEAT_KEYS.includes(k));
    if (unknown) r.add('invalid_request', `${path}.${unknown}`, `A seat takes ${SEAT_KEYS.join(', ')}; \`${unknown}\` is none of them.`);
    const tuning = parseTuning(entry, path, r);
    return { kind: 'fixed', engine: entry.engine, backup: entry.backup as string | undefined, ...(tuning && { tuning }), path };
  }
  r.add(
    'invalid_request',
    path,
    'A seat is an engine id ("family/model"), `{engine, backup?, temperature?, seed?, system_prompt?}`, or `{auto: true}`.',
  );
  return undefined;
}

/** A seat's tuning (issue 39 item 3), each field checked on its own; undefined when it sets none. */
function parseTuning(entry: Json, path: string, r: Refusals): SeatTuning | undefined {
  const tuning: SeatTuning = {};
  const { temperature, seed, system_prompt: systemPrompt } = entry;
  if (temperature !== undefined) {
    if (typeof temperature === 'number' && temperature >= 0 && temperature <= 2) tuning.temperature = temperature;
    else r.add('invalid_value', `${path}.temperature`, '`temperature` is a number from 0 to 2.');
  }
  if (seed !== undefined) {
    if (Number.isSafeInteger(seed) && (seed as number) >= 0 && (seed as number) <= 2_147_483_647) tuning.seed = seed as number;
    else r.add('invalid_value', `${path}.seed`, '`seed` is a whole number from 0 to 2147483647.');
  }
  if (systemPrompt !== undefined) {
    if (
      typeof systemPrompt === 'string' &&
      systemPrompt.trim() !== '' &&
      systemPrompt.length <= SEAT_SYSTEM_PROMPT_MAX &&
      isStorableText(systemPrompt)
    )
      tuning.systemPrompt = systemPrompt;
    else r.add('invalid_value', `${path}.system_prompt`, `\`system_prompt\` is text of 1 to ${SEAT_SYSTEM_PROMPT_MAX} characters.`);
  }
  return Object.keys(tuning).length > 0 ? tuning : undefined;
}

/** What an engine cannot be asked: a sampling seed where its protocol has none, a temperature a reasoning model refuses. */
function checkTuning(seat: { tuning?: SeatTuning; path: string }, engine: SpecEngine, r: Refusals): void {
  if (seat.tuning?.seed !== undefined && engine.protocol !== undefined && !SEEDED_PROTOCOLS.includes(engine.protocol))
    r.add('invalid_value', `${seat.path}.seed`, `\`${engine.id}\` (${engine.protocol}) takes no sampling seed; drop \`seed\`.`);
  if (seat.tuning?.temperature !== undefined && engine.reasoning === true)
    r.add(
      'invalid_value',
      `${seat.path}.temperature`,
      `\`${engine.id}\` is a reasoning model and takes no temperature; drop \`temperature\`.`,
    );
}

/** An engine a seat, backup, pool or staff entry names: it exists, can run here, and is real in a platform mode. */
function checkEngine(id: string, path: string, ctx: ValidationContext, r: Refusals): SpecEngine | undefined {
  const engine = ctx.find(id);
  if (!engine) {
    r.add('seat_engine_not_found', path, `No engine \`${id}\` in the catalog; \`list_engines\` lists them.`);
    return undefined;
  }
  if (!ctx.canRun(id)) r.add('engine_unavailable', path, `\`${id}\` cannot run here now: no ${engine.family} credentials are configured.`);
  if (ctx.system && engine.family === 'sim')
    r.add('system_mode_seats', path, `A platform mode seats real engines; \`${id}\` is simulated.`);
  return engine;
}

/** Rows by tier, with auto seats already picked from the pool. */
type Rows = Map<Tier, { seats: string[]; backups: (string | null)[]; tunings?: (SeatTuning | null)[] }>;

function checkSeats(spec: Json, ctx: ValidationContext, r: Refusals): Rows | undefined {
  const hasFlat = spec.seats !== undefined;
  const hasByTier = spec.seats_by_tier !== undefined;
  const raw = new Map<Tier, Seat[]>();
  if (hasFlat && hasByTier) r.add('seats_ambiguous', 'seats', 'Give `seats_by_tier` or `seats` (one row, with `tier`), not both.');
  else if (!hasFlat && !hasByTier)
    r.add(
      'seat_selection_required',
      'seats_by_tier',
      'Seat the mode: `seats_by_tier` ({experience, plus, pro} rows), or `seats` with `tier`.',
    );
  else if (hasByTier) {
    const byTier = spec.seats_by_tier;
    if (!isObj(byTier) || Object.values(byTier).some((row) => !Array.isArray(row))) {
      r.add('seats_by_tier_invalid', 'seats_by_tier', '`seats_by_tier` maps tiers to rows: {"plus": ["family/model", …], …}.');
    } else {
      for (const [key, row] of Object.entries(byTier)) {
        if (!isTier(key))
          r.add('seat_tier_unknown', `seats_by_tier.${key}`, `\`${key}\` is not a tier: rows are keyed experience, plus or pro.`);
        else
          raw.set(
            key,
            (row as unknown[]).flatMap((e, i) => parseSeat(e, `seats_by_tier.${key}[${i}]`, r) ?? []),
          );
      }
    }
  } else {
    if (!Array.isArray(spec.seats)) r.add('invalid_request', 'seats', '`seats` is one row: an array of seats.');
    else if (spec.tier === undefined) r.add('tier_required', 'tier', 'A flat `seats` row names the `tier` it fills.');
    else if (!isTier(spec.tier)) r.add('seat_tier_unknown', 'tier', `\`${String(spec.tier)}\` is not a tier (experience, plus or pro).`);
    else {
      const seats = spec.seats.flatMap((e, i) => parseSeat(e, `seats[${i}]`, r) ?? []);
      raw.set(spec.tier, seats);
      if (ctx.system && seats.some((s) => s.kind === 'fixed'))
        r.add(
          'system_mode_needs_tiers',
          'seats',
          'A new platform mode with chosen seats sets them per tier (`seats_by_tier`) or auto-picks them.',
        );
    }
  }
  if (spec.tier !== undefined && !hasFlat) r.add('invalid_request', 'tier', '`tier` goes with a flat `seats` row.');

  const served = TIERS.filter((t) => raw.has(t));
  const ranks = served.map((t) => TIER_RANK[t]);
  if (ranks.length > 0 && ranks[ranks.length - 1] - ranks[0] + 1 !== ranks.length)
    r.add('seat_tiers_not_contiguous', 'seats_by_tier', `Rows for ${served.join(' and ')} leave a gap: add the tiers between.`);
  checkMinTier(spec.min_tier, served, r);

  const auto = checkAuto(spec.auto, raw, ctx, r);
  const rows: Rows = new Map();
  for (const [tier, seats] of raw) {
    const path = hasByTier ? `seats_by_tier.${tier}` : 'seats';
    const fixed = seats.filter((s): s is Extract<Seat, { kind: 'fixed' }> => s.kind === 'fixed');
    if (seats.length !== ROW_SIZE[tier]) {
      r.add(
        'six_seats_required',
        path,
        `The ${tier} row seats ${ROW_SIZE[tier]} engine${ROW_SIZE[tier] === 1 ? '' : 's'}, not ${seats.length}.`,
      );
    }
    if (fixed.length > 0 && fixed.length < seats.length) r.add('auto_seats_mixed', path, 'A row is all auto seats or all fixed seats.');
    if (tier === 'experience' && fixed.length < seats.length)
      r.add('seats_by_tier_needs_fixed', path, 'The experience row is the express seat: name its engine; auto-pick fills panel rows.');
    for (const seat of seats) {
      if (seat.kind === 'auto' && seat.backup !== undefined)
        r.add('auto_seat_backup', seat.path, "An auto seat names no backup: the pool's next unpicked engine backs it up.");
    }
    const seen = new Set<string>();
    const makers = new Set<string>();
    for (const seat of fixed) {
      // One engine may sit twice only tuned apart (issue 39 item 3): two identical seats would give one answer twice.
      const sitting = canonicalJson({ engine: seat.engine, tuning: seat.tuning ?? null });
      if (seen.has(sitting))
        r.add('duplicate_seat_engine', seat.path, `\`${seat.engine}\` already sits in the ${tier} row with the same tuning.`);
      seen.add(sitting);
      const engine = checkEngine(seat.engine, seat.path, ctx, r);
      if (engine) {
        checkTuning(seat, engine, r);
        makers.add(engine.maker);
        if (TIER_RANK[engine.tier] > TIER_RANK[tier])
          r.add(
            'seat_engine_above_tier',
            seat.path,
            `\`${seat.engine}\` is a ${engine.tier} engine; the ${tier} row seats ${tier} engines or below.`,
          );
      }
      if (seat.backup !== undefined) {
        if (seat.backup === seat.engine)
          r.add('duplicate_seat_engine', `${seat.path}.backup`, 'A seat backs up to another engine than its own.');
        const backup = checkEngine(seat.backup, `${seat.path}.backup`, ctx, r);
        if (backup && TIER_RANK[backup.tier] > TIER_RANK[tier])
          r.add('seat_engine_above_tier', `${seat.path}.backup`, `\`${seat.backup}\` is a ${backup.tier} engine, above the ${tier} row.`);
      }
    }
    if (tier !== 'experience' && fixed.length === seats.length && fixed.length > 1 && makers.size === 1)
      r.add('single_family_row', path, `Every seat of the ${tier} row is made by ${[...makers][0]}: seat at least two makers.`);
    if (fixed.length === seats.length)
      rows.set(tier, {
        seats: fixed.map((s) => s.engine),
        backups: fixed.map((s) => s.backup ?? null),
        tunings: fixed.map((s) => s.tuning ?? null),
      });
    else if (fixed.length === 0 && auto && tier !== 'experience') {
      const picked = auto.pick(tier, seats.length, path);
      if (picked) rows.set(tier, picked);
    }
  }
  checkSystemTiers(spec.min_tier, served, ctx, r);
  return rows.size === raw.size && raw.size > 0 ? rows : undefined;
}

function checkMinTier(value: unknown, served: readonly Tier[], r: Refusals): void {
  if (value === undefined) return;
  if (!isTier(value)) r.add('seat_tier_unknown', 'min_tier', `\`${String(value)}\` is not a tier (experience, plus or pro).`);
  else if (served.length > 0 && served[0] !== value)
    r.add('seat_tiers_min_tier_mismatch', 'min_tier', `\`min_tier\` is ${value} but the lowest row is ${served[0]}.`);
}

function checkSystemTiers(minTier: unknown, served: readonly Tier[], ctx: ValidationContext, r: Refusals): void {
  const stored = ctx.storedSystemTiers;
  if (!ctx.system || !stored || stored.length === 0) return;
  const lowest = stored.reduce((a, b) => (TIER_RANK[a] <= TIER_RANK[b] ? a : b));
  if (isTier(minTier) && TIER_RANK[minTier] > TIER_RANK[lowest])
    r.add('system_mode_tier_dropped', 'min_tier', `The platform mode serves ${lowest} callers; \`min_tier\` ${minTier} would drop them.`);
  const missing = stored.filter((t) => !served.includes(t));
  if (missing.length > 0)
    r.add('system_mode_seats_incomplete', 'seats_by_tier', `The platform mode serves ${missing.join(', ')}: keep a row for each.`, {
      tiers: missing,
    });
}

interface AutoPicker {
  pick(tier: Tier, count: number, path: string): { seats: string[]; backups: (string | null)[] } | undefined;
}

function checkAuto(value: unknown, raw: ReadonlyMap<Tier, Seat[]>, ctx: ValidationContext, r: Refusals): AutoPicker | undefined {
  const panelRows = [...raw].filter(([t, seats]) => t !== 'experience' && seats.length > 0);
  const autoRows = panelRows.filter(([, seats]) => seats.every((s) => s.kind === 'auto'));
  const anyAuto = [...raw.values()].some((seats) => seats.some((s) => s.kind === 'auto'));
  if (autoRows.length > 0 && autoRows.length < panelRows.length)
    r.add(
      'auto_rows_differ_by_tier',
      'seats_by_tier',
      'Auto-pick fills every panel row or none: make the rows all auto, or name every seat.',
    );
  const diversity = isObj(value) ? value.family_diversity : undefined;
  if (value !== undefined && !isObj(value)) r.add('invalid_request', 'auto', '`auto` is {pool, family_diversity?}.');
  if (diversity !== undefined) {
    if (!anyAuto)
      r.add('family_diversity_needs_auto', 'auto.family_diversity', 'Family diversity applies to auto seats, and no seat is auto.');
    if (!oneOf(DIVERSITY, diversity))
      r.add('family_diversity_invalid', 'auto.family_diversity', '`family_diversity` is `distinct` or `any`.');
  }
  if (!anyAuto) return undefined;
  const pool = isObj(value) ? value.pool : undefined;
  if (!Array.isArray(pool) || pool.length === 0 || pool.some((id) => typeof id !== 'string')) {
    r.add('auto_needs_fixed_pool', 'auto.pool', 'Auto seats pick from `auto.pool`: a list of engine ids.');
    return undefined;
  }
  const engines = (pool as string[]).flatMap((id, i) => checkEngine(id, `auto.pool[${i}]`, ctx, r) ?? []);
  const distinct = (diversity ?? 'distinct') === 'distinct';
  return {
    pick(tier, count, path) {
      const candidates = engines.filter((e) => e.tier === tier);
      if (candidates.length <= count) {
        r.add(
          'auto_picked_needs_backup',
          'auto.pool',
          `The pool has ${candidates.length} ${tier} engine(s) for ${count} auto seats: add at least ${count + 1 - candidates.length} more, so each picked seat has a backup.`,
        );
        return undefined;
      }
      const picked: SpecEngine[] = [];
      for (const e of candidates) {
        if (picked.length < count && !(distinct && picked.some((p) => p.maker === e.maker))) picked.push(e);
      }
      if (picked.length < count) {
        r.add(
          'family_diversity_invalid',
          path,
          `The pool's ${tier} engines come from ${picked.length} maker(s); \`distinct\` needs ${count}.`,
        );
        return undefined;
      }
      const spares = candidates.filter((e) => !picked.includes(e));
      return { seats: picked.map((e) => e.id), backups: picked.map((_, i) => spares[i % spares.length].id) };
    },
  };
}

interface StaffEntry {
  tier: Tier;
  engine: string;
  backup?: string;
}
type Staff = { judge: StaffEntry; synthesis: StaffEntry; classifier?: StaffEntry };

function checkStaff(value: unknown, ctx: ValidationContext, r: Refusals): Staff | undefined {
  if (!isObj(value)) {
    r.add('staff_role_unknown', 'staff', 'A mode names its staff: {judge, synthesis, classifier?}, each {tier, engine, backup?}.');
    return undefined;
  }
  const out: Partial<Staff> = {};
  let ok = true;
  for (const role of Object.keys(value)) {
    if (!oneOf(STAFF_ROLES, role)) {
      r.add('staff_role_unknown', `staff.${role}`, `\`${role}\` is not a staff role: judge, synthesis or classifier.`);
      ok = false;
    }
  }
  for (const role of STAFF_ROLES) {
    const path = `staff.${role}`;
    const entry = value[role];
    if (entry === undefined) {
      if (role !== 'classifier') {
        r.add('staff_role_unknown', path, `Every mode names its ${role}.`);
        ok = false;
      }
      continue;
    }
    const checked = checkStaffEntry(role, entry, path, ctx, r);
    if (checked) out[role] = checked;
    else ok = false;
  }
  return ok && out.judge && out.synthesis ? (out as Staff) : undefined;
}

function checkStaffEntry(
  role: (typeof STAFF_ROLES)[number],
  entry: unknown,
  path: string,
  ctx: ValidationContext,
  r: Refusals,
): StaffEntry | undefined {
  if (!isObj(entry)) {
    r.add('staff_tiers_shape', path, 'A staff entry is {tier, engine, backup?}.');
    return undefined;
  }
  if (entry.auto !== undefined) {
    r.add('staff_auto_not_allowed', path, 'Name the staff engine: auto-pick is for seats.');
    return undefined;
  }
  const extra = Object.keys(entry).filter((k) => !['tier', 'engine', 'backup'].includes(k) || (k === 'backup' && role === 'classifier'));
  if (extra.length > 0) {
    r.add(
      'staff_tiers_shape',
      path,
      `A ${role} entry is {tier, engine${role === 'classifier' ? '' : ', backup?'}}; drop ${extra.join(', ')}.`,
    );
  }
  let tier: Tier | undefined;
  if (entry.tier === undefined) r.add('tier_required', `${path}.tier`, `The ${role} names its tier.`);
  else if (!isTier(entry.tier))
    r.add('staff_tier_unknown', `${path}.tier`, `\`${String(entry.tier)}\` is not a tier (experience, plus or pro).`);
  else {
    tier = entry.tier;
    if (role !== 'classifier' && tier === 'experience')
      r.add('staff_tier_is_lowest', `${path}.tier`, `The ${role} sits above the lowest tier: choose plus or pro.`);
  }
  if (entry.engine === undefined) {
    if (entry.backup !== undefined) r.add('staff_backup_without_primary', `${path}.engine`, `The ${role} has a backup but no engine.`);
    else r.add('staff_tiers_shape', `${path}.engine`, `The ${role} names its engine.`);
    return undefined;
  }
  if (typeof entry.engine !== 'string' || (entry.backup !== undefined && typeof entry.backup !== 'string')) {
    r.add('staff_tiers_shape', path, 'Staff engines are engine ids ("family/model").');
    return undefined;
  }
  const backup = entry.backup as string | undefined;
  if (backup !== undefined && backup === entry.engine)
    r.add('staff_backup_same_as_primary', `${path}.backup`, `The ${role}'s backup is its own engine.`);
  for (const [id, where] of [[entry.engine, `${path}.engine`], ...(backup ? [[backup, `${path}.backup`]] : [])] as const) {
    const engine = checkEngine(id, where, ctx, r);
    if (engine && tier && TIER_RANK[engine.tier] > TIER_RANK[tier])
      r.add('staff_engine_above_tier', where, `\`${id}\` is a ${engine.tier} engine; the ${role} is ${tier}.`);
  }
  return tier && extra.length === 0 ? { tier, engine: entry.engine, ...(backup ? { backup } : {}) } : undefined;
}

function checkStaffAgainstRows(rows: Rows, staff: Staff, r: Refusals): void {
  const panel = TIERS.filter((t) => t !== 'experience' && rows.has(t));
  const top = panel[panel.length - 1];
  if (!top) return;
  for (const role of ['judge', 'synthesis'] as const) {
    if (TIER_RANK[staff[role].tier] > TIER_RANK[top])
      r.add(
        'seat_tiers_below_staff',
        `staff.${role}.tier`,
        `The ${role} is ${staff[role].tier} but the highest panel row is ${top}: staff may not outrank the panel.`,
      );
  }
}

/**
 * A mode that convenes a panel needs a panel row; one that is always express needs only its express seat, and has no
 * panel round for a quorum to shorten.
 */
function checkPanelShape(rows: Rows, settings: Settings, r: Refusals): void {
  if (settings.express !== 'always' && !rows.has('plus') && !rows.has('pro'))
    r.add(
      'six_seats_required',
      'seats_by_tier',
      'A mode that convenes a panel seats three engines in a plus or pro row (or set `express: "always"`).',
    );
  if (settings.express === 'always' && settings.quorum)
    r.add('quorum_invalid', 'quorum', 'A mode that is always express answers with one seat: it has no panel round for a quorum.');
}

/**
 * `quorum` (issue 40 item 6): the seats a panel round waits for, at least two and at most a panel row's seats;
 * `grace_ms` only with it (default 2 s), from 0 to 120 s.
 */
function checkQuorum(spec: Json, r: Refusals): Quorum | undefined | null {
  const { quorum, grace_ms: grace } = spec;
  const seats = ROW_SIZE.plus;
  if (quorum === undefined) {
    if (grace !== undefined)
      r.add('grace_without_quorum', 'grace_ms', '`grace_ms` is the grace a `quorum` gives late seats: set `quorum` too, or drop it.');
    return undefined;
  }
  let ok = true;
  if (typeof quorum !== 'number' || !Number.isInteger(quorum) || quorum < 2 || quorum > seats) {
    r.add(
      'quorum_invalid',
      'quorum',
      `\`quorum\` is the seats a round waits for: a whole number from 2 to ${seats} (a panel row's seats).`,
    );
    ok = false;
  }
  const graceMs = grace ?? DEFAULTS.grace_ms;
  if (typeof graceMs !== 'number' || !Number.isInteger(graceMs) || graceMs < 0 || graceMs > QUORUM_GRACE_MAX_MS) {
    r.add('invalid_request', 'grace_ms', `\`grace_ms\` is a whole number of milliseconds from 0 to ${QUORUM_GRACE_MAX_MS}.`);
    ok = false;
  }
  return ok ? { seats: quorum as number, graceMs: graceMs as number } : null;
}

const AGGREGATION_KEYS = ['method', 'prose', 'tie_break', 'ballot', 'first_wave'];
/** The one first wave there is: two of a panel row's three seats. */
const FIRST_WAVE = 2;

/**
 * `aggregation` (issue 52 item 3): how the panel makes its one answer; absent, the judge and synthesis of every mode
 * before it, and no `aggregation` in the config (so its hash is unchanged). Each wrong key or value is
 * `aggregation_invalid` at its path; what clashes with the rest of the spec is `aggregation_conflict`.
 */
function checkAggregation(spec: Json, r: Refusals): Aggregation | undefined | null {
  const block = spec.aggregation;
  if (block === undefined) return undefined;
  const before = r.list.length;
  if (!isObj(block)) {
    r.add('aggregation_invalid', 'aggregation', '`aggregation` is an object: `{method, prose?, tie_break?, ballot?, first_wave?}`.');
    return null;
  }
  for (const key of Object.keys(block).filter((k) => !AGGREGATION_KEYS.includes(k)))
    r.add('aggregation_invalid', `aggregation.${key}`, `Unknown field \`${key}\`; \`aggregation\` takes ${AGGREGATION_KEYS.join(', ')}.`);
  const { method, prose = DEFAULTS.aggregation.prose, tie_break: tieBreak = DEFAULTS.aggregation.tie_break, ballot } = block;
  const firstWave = block.first_wave;
  const known = oneOf(AGGREGATION_METHODS, method);
  if (!known)
    r.add(
      'aggregation_invalid',
      'aggregation.method',
      `\`aggregation.method\` is ${method === undefined ? 'required: ' : ''}one of ${AGGREGATION_METHODS.join(', ')}.`,
    );
  if (!oneOf(AGGREGATION_PROSE, prose)) r.add('aggregation_invalid', 'aggregation.prose', '`aggregation.prose` is verbatim or pinned.');
  else if (prose === 'pinned' && method === 'synthesis')
    r.add(
      'aggregation_invalid',
      'aggregation.prose',
      '`prose: "pinned"` rewrites the seat text a vote or the judge chose; `method: "synthesis"` writes its answer already. Drop `prose`, or choose select or vote.',
    );
  if (!oneOf(TIE_BREAKS, tieBreak)) r.add('aggregation_invalid', 'aggregation.tie_break', '`aggregation.tie_break` is judge or first.');
  else if (block.tie_break !== undefined && known && method !== 'vote')
    r.add('aggregation_invalid', 'aggregation.tie_break', '`tie_break` breaks a tie of the vote: set it only with `method: "vote"`.');
  if (ballot !== undefined && typeof ballot !== 'boolean')
    r.add('aggregation_invalid', 'aggregation.ballot', '`aggregation.ballot` is true or false.');
  else if (ballot !== undefined && known && method !== 'vote')
    r.add(
      'aggregation_invalid',
      'aggregation.ballot',
      '`ballot` reads the seats\' answers for the vote: set it only with `method: "vote"`.',
    );
  if (firstWave !== undefined && firstWave !== FIRST_WAVE)
    r.add(
      'aggregation_invalid',
      'aggregation.first_wave',
      `\`aggregation.first_wave\` is ${FIRST_WAVE}: round 1 asks two seats first, the third only when they disagree or one is unreadable.`,
    );
  checkAggregationConflicts(spec, { method: known ? method : undefined, firstWave }, r);
  if (r.list.length > before) return null;
  return {
    method: method as Aggregation['method'],
    prose: prose as Aggregation['prose'],
    tieBreak: tieBreak as Aggregation['tieBreak'],
    ballot: (ballot ?? (method === 'vote' && DEFAULTS.aggregation.ballot)) as boolean,
    ...(firstWave !== undefined && { firstWave: FIRST_WAVE }),
  };
}

/** What an `aggregation` cannot go with: no panel, a quorum beside a first wave, a synthesis setting with no synthesis. */
function checkAggregationConflicts(spec: Json, agg: { method?: Aggregation['method']; firstWave: unknown }, r: Refusals): void {
  if (spec.express === 'always')
    r.add(
      'aggregation_conflict',
      'aggregation',
      'A mode that is always express answers with one seat: it has no panel to aggregate. Drop `aggregation`, or set `express`.',
    );
  if (agg.firstWave !== undefined && spec.quorum !== undefined)
    r.add(
      'aggregation_conflict',
      'aggregation.first_wave',
      '`first_wave` and `quorum` both decide which seats round 1 waits for: keep one of them.',
    );
  if (spec.skip_synthesis_when_converged !== undefined && agg.method !== undefined && agg.method !== 'synthesis')
    r.add(
      'aggregation_conflict',
      'skip_synthesis_when_converged',
      `With \`method: "${agg.method}"\` the answer is a seat's own text (rewritten only with \`prose: "pinned"\`): there is no synthesis to skip. Drop \`skip_synthesis_when_converged\`.`,
    );
}

interface Settings {
  rounds: number;
  critique: ModeConfig['critique'];
  grounding: ModeConfig['grounding'];
  express: ModeConfig['express'];
  skipSynthesisWhenConverged: boolean;
  seatMaxOutputTokens: number;
  fees: ModeConfig['fees'];
  ceilingMicros: number;
  quorum?: Quorum;
  aggregation?: Aggregation;
}

function checkSettings(spec: Json, ctx: ValidationContext, r: Refusals): Settings | undefined {
  const before = r.list.length;
  const rounds = spec.rounds ?? DEFAULTS.rounds;
  if (typeof rounds !== 'number' || !Number.isInteger(rounds) || rounds < 1 || rounds > 3)
    r.add('invalid_request', 'rounds', '`rounds` is a whole number from 1 to 3.');
  const enums = [
    ['critique', CRITIQUE],
    ['grounding', GROUNDING],
    ['express', EXPRESS],
  ] as const;
  for (const [field, values] of enums) {
    if (spec[field] !== undefined && !oneOf(values, spec[field]))
      r.add('invalid_value', field, `\`${field}\` is one of ${values.join(', ')}.`);
  }
  const skip = spec.skip_synthesis_when_converged ?? DEFAULTS.skip_synthesis_when_converged;
  if (typeof skip !== 'boolean')
    r.add('invalid_value', 'skip_synthesis_when_converged', '`skip_synthesis_when_converged` is true or false.');
  const maxOut = spec.seat_max_output_tokens ?? DEFAULTS.seat_max_output_tokens;
  if (typeof maxOut !== 'number' || !Number.isInteger(maxOut) || maxOut < 16 || maxOut > 32_000)
    r.add('invalid_request', 'seat_max_output_tokens', '`seat_max_output_tokens` is a whole number from 16 to 32000.');
  if (spec.fidelity !== undefined) {
    if (RETIRED_FIDELITY.includes(String(spec.fidelity)))
      r.add('fidelity_retired', 'fidelity', `\`fidelity: ${String(spec.fidelity)}\` was retired: set \`rounds\` and \`critique\` instead.`);
    else r.add('fidelity_inert', 'fidelity', '`fidelity` no longer changes anything; drop it.');
  }
  const ceiling = spec.ceiling_usd ?? DEFAULTS.ceiling_usd;
  if (typeof ceiling !== 'number' || !(ceiling > 0) || ceiling > CEILING_MAX_USD)
    r.add('invalid_request', 'ceiling_usd', `\`ceiling_usd\` is a positive number of dollars up to ${CEILING_MAX_USD}.`);
  const fees = checkFees(spec.fees, ctx.floor, r);
  const quorum = checkQuorum(spec, r);
  const aggregation = checkAggregation(spec, r);
  if (r.list.length > before || !fees || quorum === null || aggregation === null) return undefined;
  return {
    rounds: rounds as number,
    critique: (spec.critique ?? DEFAULTS.critique) as Settings['critique'],
    grounding: (spec.grounding ?? DEFAULTS.grounding) as Settings['grounding'],
    express: (spec.express ?? DEFAULTS.express) as Settings['express'],
    skipSynthesisWhenConverged: skip as boolean,
    seatMaxOutputTokens: maxOut as number,
    fees,
    ceilingMicros: usdMicros(ceiling as number),
    ...(quorum && { quorum }),
    ...(aggregation && { aggregation }),
  };
}

/** A fee in dollars, at or above `floor`; absent → the floor. */
function fee(value: unknown, floor: number, path: string, r: Refusals): number | undefined {
  if (value === undefined) return floor;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1_000) {
    r.add('invalid_request', path, `\`${path}\` is a number of dollars from 0 to 1000.`);
    return undefined;
  }
  if (value < floor) r.add('price_below_floor', path, `\`${path}\` is below the price floor of $${floor}.`);
  return value;
}

function checkFees(value: unknown, floor: PriceFloor, r: Refusals): ModeConfig['fees'] | undefined {
  if (value !== undefined && !isObj(value)) {
    r.add('invalid_request', 'fees', '`fees` is {surcharge_by_depth_usd?, express_surcharge_usd?, per_mtok_usd?}.');
    return undefined;
  }
  const f = value ?? {};
  const unknown = Object.keys(f).filter((k) => !['surcharge_by_depth_usd', 'express_surcharge_usd', 'per_mtok_usd'].includes(k));
  for (const k of unknown) r.add('invalid_request', `fees.${k}`, `Unknown fee \`${k}\`.`);
  const byDepth = f.surcharge_by_depth_usd;
  if (byDepth !== undefined && !isObj(byDepth))
    r.add('invalid_request', 'fees.surcharge_by_depth_usd', 'Per-depth surcharges are {light, medium, deep}.');
  const depth = isObj(byDepth) ? byDepth : {};
  const [light, medium, deep] = DEPTHS.map((d) => fee(depth[d], floor.surchargeUsd, `fees.surcharge_by_depth_usd.${d}`, r));
  const express = fee(f.express_surcharge_usd, floor.surchargeUsd, 'fees.express_surcharge_usd', r);
  const perMtok = fee(f.per_mtok_usd, floor.perMtokUsd, 'fees.per_mtok_usd', r);
  if (light === undefined || medium === undefined || deep === undefined || express === undefined || perMtok === undefined) return undefined;
  return {
    surchargeByDepthMicros: { light: usdMicros(light), medium: usdMicros(medium), deep: usdMicros(deep) },
    expressSurchargeMicros: usdMicros(express),
    perMtokInputUsd: perMtok,
  };
}

function compile(rows: Rows, staff: Staff, settings: Settings, ctx: ValidationContext): ModeConfig {
  const row = (t: Tier) => {
    const found = rows.get(t);
    if (!found) return undefined;
    return {
      seats: found.seats,
      ...(found.backups.some((b) => b !== null) && { backups: found.backups }),
      ...(found.tunings?.some((t) => t !== null) && { tunings: found.tunings }),
    };
  };
  const lowest = TIERS.find((t) => rows.has(t)) as Tier;
  // Without an experience row, the express lane seats the lowest panel row's first engine.
  const experience = row('experience') ?? { seats: [(rows.get(lowest) as { seats: string[] }).seats[0]] };
  const tiers: ModeConfig['tiers'] = { experience };
  const plus = row('plus');
  const pro = row('pro');
  if (plus) tiers.plus = plus;
  if (pro) tiers.pro = pro;
  const staffOf = (e: StaffEntry) => (e.backup ? { engine: e.engine, backup: e.backup } : { engine: e.engine });
  const engines = [
    ...[...rows.values()].flatMap((r) => [...r.seats, ...r.backups.filter((b): b is string => b !== null)]),
    ...experience.seats,
    ...[staff.judge, staff.synthesis, ...(staff.classifier ? [staff.classifier] : [])].flatMap((e) => [
      e.engine,
      ...(e.backup ? [e.backup] : []),
    ]),
  ];
  const families = [...new Set(engines.map((id) => ctx.find(id)?.family ?? id.split('/')[0]))].sort();
  return {
    tiers,
    staff: {
      judge: staffOf(staff.judge),
      synthesis: staffOf(staff.synthesis),
      ...(staff.classifier ? { classifier: { engine: staff.classifier.engine } } : {}),
    },
    rounds: settings.rounds,
    critique: settings.critique,
    grounding: settings.grounding,
    express: settings.express,
    skipSynthesisWhenConverged: settings.skipSynthesisWhenConverged,
    seatMaxOutputTokens: settings.seatMaxOutputTokens,
    fees: settings.fees,
    ceilingMicros: settings.ceilingMicros,
    providerFamilies: families,
    // Absent unless set: a mode without one keeps its configuration hash.
    ...(settings.quorum && { quorum: settings.quorum }),
    ...(settings.aggregation && { aggregation: settings.aggregation }),
  };
}

/** A complete spec that passes every rule here (with the default price floor): what `quorum mode template` prints. */
export function modeTemplate(): Record<string, unknown> {
  return {
    name: 'My Panel',
    ticker: 'MYPN',
    description: 'Three engines from three makers answer; a judge scores them; one synthesis answer.',
    use_when: 'General questions where a second and third opinion are worth the cost.',
    seats_by_tier: {
      experience: ['openai/gpt-4.1-mini'],
      plus: [{ auto: true }, { auto: true }, { auto: true }],
      pro: [{ auto: true }, { auto: true }, { auto: true }],
    },
    auto: {
      pool: [
        'openai/gpt-4.1',
        'anthropic/claude-sonnet-4',
        'google/gemini-2.5-flash',
        'bedrock/meta.llama3-3-70b-instruct',
        'openai/gpt-5',
        'anthropic/claude-opus-4-1',
        'google/gemini-2.5-pro',
        'bedrock/meta.llama4-maverick-17b-instruct',
      ],
      family_diversity: 'distinct',
    },
    staff: {
      judge: { tier: 'plus', engine: 'anthropic/claude-sonnet-4', backup: 'openai/gpt-4.1' },
      synthesis: { tier: 'plus', engine: 'openai/gpt-4.1', backup: 'anthropic/claude-sonnet-4' },
    },
    rounds: 2,
    critique: 'when_split',
    grounding: 'auto',
    express: 'auto',
    skip_synthesis_when_converged: true,
    seat_max_output_tokens: 1024,
    fees: { surcharge_by_depth_usd: { light: 0.002, medium: 0.005, deep: 0.01 }, express_surcharge_usd: 0.001, per_mtok_usd: 0.5 },
    ceiling_usd: 1,
  };
}

const Engine = z.string().describe('An engine id "family/model" from `list_engines`.');
const SeatDoc = z.union([
  Engine,
  z.object({
    engine: Engine,
    backup: Engine.optional(),
    temperature: z.number().min(0).max(2).optional().describe('Sampling temperature for this seat (not on reasoning models).'),
    seed: z.number().int().min(0).max(2_147_483_647).optional().describe('Sampling seed (OpenAI-compatible and Gemini engines).'),
    system_prompt: z
      .string()
      .max(SEAT_SYSTEM_PROMPT_MAX)
      .optional()
      .describe('A system prompt of this seat’s own, before the call’s messages: seats on one model can answer differently.'),
  }),
  z.object({ auto: z.literal(true) }),
]);
const StaffDoc = z.object({ tier: z.enum(TIERS), engine: Engine, backup: Engine.optional() });
const usd = z.number().nonnegative();
const AggregationDoc = z
  .object({
    method: z
      .enum(AGGREGATION_METHODS)
      .describe(
        "`synthesis`: the judge scores the seats and a synthesis writes the answer. `select`: the judge names one seat and its text is returned as written. `vote`: where the question has an answer kind, the seats' answers are read and voted and the winning seat's text returned as written (without a kind, as `select`).",
      ),
    prose: z
      .enum(AGGREGATION_PROSE)
      .optional()
      .describe(
        `Default \`${DEFAULTS.aggregation.prose}\`: the chosen seat's text as written. \`pinned\`: a synthesis rewrites it, told the chosen answer; the seat's text is kept if the rewrite changes the answer. Not with \`synthesis\`.`,
      ),
    tie_break: z
      .enum(TIE_BREAKS)
      .optional()
      .describe(
        `Vote only; default \`${DEFAULTS.aggregation.tie_break}\`. \`judge\`: the judge chooses among the tied seats only; \`first\`: the first tied seat in seat order.`,
      ),
    ballot: z
      .boolean()
      .optional()
      .describe(
        "Vote only (default true): when no seat's answer is readable, one short structured call may read the answers out of the seats' texts.",
      ),
    first_wave: z
      .literal(FIRST_WAVE)
      .optional()
      .describe('Round 1 asks 2 seats first and the third only when they disagree or one is unreadable. Not with `quorum`.'),
  })
  .strict();

/** The spec's shape as documentation (served as JSON Schema); `validateMode` is what enforces it, with the codes above. */
export const ModeSpecDocSchema = z
  .object({
    name: z.string().describe(`${NAME_MIN}–${NAME_MAX} characters: letters, numbers, spaces and - ' & . ,`),
    ticker: z.string().optional().describe('Four letters A–Z: the mode part of COMPANY:MODE. Required in Form B.'),
    description: z.string().nullable().optional().describe(`At most ${DESCRIPTION_MAX} characters, no < or >.`),
    use_when: z.string().optional().describe(`When to pick this mode, at most ${USE_WHEN_MAX} characters.`),
    min_tier: z.enum(TIERS).optional().describe('The lowest tier with a row; checked, not required.'),
    seats_by_tier: z
      .object({ experience: z.array(SeatDoc).optional(), plus: z.array(SeatDoc).optional(), pro: z.array(SeatDoc).optional() })
      .optional()
      .describe('Rows by tier: experience seats 1 (the express seat), plus and pro seat 3 each.'),
    seats: z.array(SeatDoc).optional().describe('Instead of seats_by_tier: one row, for the tier named by `tier`.'),
    tier: z.enum(TIERS).optional(),
    auto: z
      .object({ pool: z.array(Engine), family_diversity: z.enum(DIVERSITY).optional() })
      .optional()
      .describe('Engines auto seats pick from, per tier; `distinct` (default) seats different makers.'),
    staff: z.object({ judge: StaffDoc, synthesis: StaffDoc, classifier: StaffDoc.omit({ backup: true }).optional() }),
    rounds: z.number().int().min(1).max(3).optional().describe(`Seat passes, 1–3 (default ${DEFAULTS.rounds}).`),
    critique: z.enum(CRITIQUE).optional(),
    grounding: z.enum(GROUNDING).optional(),
    express: z.enum(EXPRESS).optional().describe('`auto`: the classifier may send easy prompts to the express seat.'),
    skip_synthesis_when_converged: z.boolean().optional(),
    seat_max_output_tokens: z.number().int().min(16).max(32_000).optional(),
    fees: z
      .object({
        surcharge_by_depth_usd: z.object({ light: usd, medium: usd, deep: usd }).optional(),
        express_surcharge_usd: usd.optional(),
        per_mtok_usd: usd.optional().describe('Form B: the mode fee per 1M input tokens; output at 4×.'),
      })
      .optional()
      .describe('At or above the price floor; each defaults to it.'),
    ceiling_usd: z.number().positive().max(CEILING_MAX_USD).optional(),
    quorum: z
      .number()
      .int()
      .min(2)
      .max(ROW_SIZE.plus)
      .optional()
      .describe(
        'Seats a panel round waits for: once this many have answered and `grace_ms` has passed since the last of them, the round is judged and the seats still out are cancelled (billed their input). Absent: every seat is waited for.',
      ),
    grace_ms: z
      .number()
      .int()
      .min(0)
      .max(QUORUM_GRACE_MAX_MS)
      .optional()
      .describe(`With \`quorum\`: how long late seats still have, from the quorum's last answer (default ${DEFAULTS.grace_ms}).`),
    aggregation: AggregationDoc.optional().describe(
      'How the panel makes its one answer (docs/modes.md#aggregation). Absent: the judge scores the seats and a synthesis writes the answer, as `method: "synthesis"`. Not on a mode that is always express.',
    ),
  })
  .strict();

/** Every code `validateMode` can return, for documentation and the table-driven test. */
export const VALIDATION_CODE_NAMES = Object.keys(VALIDATION_CODES) as ValidationCode[];
