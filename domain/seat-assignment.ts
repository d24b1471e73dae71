import type { Classification, Lane } from './classifier';
import type { ModeConfig, SeatTuning, Tier } from './modes';
import type { SeatRole } from './outcome';

/**
 * Who sits where for one call: the lane rule and seat planning, pure over the mode, the tier and what the catalog
 * and the organisation's own keys can run. The activity that plans a call supplies that knowledge; the estimate
 * uses the same functions, so a quote and a deliberation never disagree about the seats.
 */

/** An engine as the workflow needs it: its id and prices (workflows do not import the catalog). */
export interface SeatedEngine {
  engineId: string;
  inputUsdPerMtok: number;
  outputUsdPerMtok: number;
  /** Run on the organisation's own provider account (seat calls only). */
  ownKey: boolean;
}

export interface SeatAssignment {
  role: SeatRole;
  /** What the mode meant to seat here. */
  designed: string;
  /** The designed engine if it can run, then its backups; the seat takes the first that answers. */
  chain: SeatedEngine[];
  /** The mode's tuning of this seat: whichever engine of the chain answers is asked with it. */
  tuning?: SeatTuning;
}

export interface StaffAssignment {
  designed: string;
  chain: SeatedEngine[];
}

export interface Seating {
  seats: SeatAssignment[];
  judge: StaffAssignment;
  synthesis: StaffAssignment;
  /** Why an engine of the mode's design is not in a chain, for the receipt. */
  notes: string[];
}

/** What planning needs to know of one catalog engine. */
export interface CatalogEngine {
  id: string;
  family: string;
  backup?: string;
  inputUsdPerMtok: number;
  outputUsdPerMtok: number;
}

export interface SeatingContext {
  find(engineId: string): CatalogEngine | undefined;
  /** The service's own keys can run it (a `sim` engine always can). */
  serviceCanRun(engineId: string): boolean;
  /** Families the organisation has its own provider access for; seats of those families run on it. */
  ownFamilies: ReadonlySet<string>;
  /** Test keys run every seat and staff engine on `sim` and never touch a provider account. */
  simOnly: boolean;
  /**
   * Whether a `sim` engine may stand in when nothing of the design can run (default yes: development and demos). In
   * production it may not: a paying caller never gets a simulated answer; such a seat simply cannot answer.
   */
  simStandIns?: boolean;
  /**
   * The engine that stands in where stand-ins are allowed, instead of the tier's `sim` engine: a real model on this
   * machine (QUORUM_STAND_IN; `npm start` with QUORUM_LOCAL_MODEL=on), so a demo answers with real text.
   */
  standIn?: string;
}

const ROLES: readonly SeatRole[] = ['seat1', 'seat2', 'seat3'];
const SIM_NAMES = ['alpha', 'beta', 'gamma'] as const;
/** How far a chain follows backups: the designed engine and two more. */
const CHAIN_LENGTH = 3;
/** Staff stand-ins when nothing of the design can run here. */
const SIM_JUDGE = 'sim/alpha-plus';
const SIM_SYNTHESIS = 'sim/beta-plus';

/**
 * The lane of a call. The `experience` tier is the express tier (spec 01: "`experience` (express)"), so it takes
 * the express lane on every mode; otherwise the mode decides, and the classifier chooses when the mode allows.
 */
export function laneFor(config: ModeConfig, tier: Tier, classification: Pick<Classification, 'lane'>): Lane {
  if (tier === 'experience' || config.express === 'always') return 'express';
  return config.express === 'auto' && classification.lane === 'express' ? 'express' : 'panel';
}

/** The engines the mode designs for the call's seats: the express tier's one seat, or the tier's panel. */
export function designedSeats(config: ModeConfig, tier: Tier, lane: Lane): string[] {
  return designedRow(config, tier, lane).seats;
}

/** The mode's tuning of each of those seats (null where it sets none). */
export function designedTunings(config: ModeConfig, tier: Tier, lane: Lane): (SeatTuning | null)[] {
  const row = designedRow(config, tier, lane);
  return row.seats.map((_, i) => row.tunings?.[i] ?? null);
}

/** The tier whose row seats a call: the experience row on the express lane, else the tier's, then plus's, then experience's. */
export function seatedTier(config: ModeConfig, tier: Tier, lane: Lane): Tier {
  if (lane === 'express') return 'experience';
  return config.tiers[tier] ? tier : config.tiers.plus ? 'plus' : 'experience';
}

function designedRow(config: ModeConfig, tier: Tier, lane: Lane): ModeConfig['tiers']['experience'] {
  return config.tiers[seatedTier(config, tier, lane)] ?? config.tiers.experience;
}

/** A mode designed on `sim` engines keeps them under a test key; only real engines are replaced by stand-ins. */
export function isSimEngine(engineId: string): boolean {
  return engineId.startsWith('sim/');
}

function planned(spec: CatalogEngine, ownKey: boolean): SeatedEngine {
  return { engineId: spec.id, inputUsdPerMtok: spec.inputUsdPerMtok, outputUsdPerMtok: spec.outputUsdPerMtok, ownKey };
}

/**
 * The engine, then its backups, keeping those that can run: on the organisation's own key when it has one for the
 * family, else the service's. When nothing of the design can run (no provider keys here), the tier's `sim` engines
 * stand in, labelled `sim/` everywhere.
 */
function chainOf(
  ctx: SeatingContext,
  designed: string,
  ownFamilies: ReadonlySet<string>,
  simStandIn: string,
  notes: string[],
): SeatedEngine[] {
  const chain: SeatedEngine[] = [];
  const seen = new Set<string>();
  let id: string | undefined = designed;
  while (id && !seen.has(id) && seen.size < CHAIN_LENGTH) {
    seen.add(id);
    const spec = ctx.find(id);
    if (!spec) {
      notes.push(`${id}: not in the engine catalog`);
      break;
    }
    const own = ownFamilies.has(spec.family);
    if (own || ctx.serviceCanRun(spec.id)) chain.push(planned(spec, own));
    else notes.push(`${spec.id}: no ${spec.family} credentials configured`);
    id = spec.backup;
  }
  if (chain.length > 0 || ctx.simStandIns === false) return chain;
  const standInId = ctx.standIn ?? simStandIn;
  const standIn = ctx.find(standInId);
  if (!standIn) throw new Error(`the catalog has no stand-in ${standInId}`);
  const backup = standIn.backup ? ctx.find(standIn.backup) : undefined;
  return backup ? [planned(standIn, false), planned(backup, false)] : [planned(standIn, false)];
}

/** A backup the mode names goes right after the designed engine, ahead of the catalog's own backups, when it can run. */
function withNamedBackup(ctx: SeatingContext, chain: SeatedEngine[], backup: string | null | undefined, ownFamilies: ReadonlySet<string>) {
  const extra = backup ? ctx.find(backup) : undefined;
  if (!extra || chain.some((c) => c.engineId === extra.id)) return chain;
  const own = ownFamilies.has(extra.family);
  if (own || ctx.serviceCanRun(extra.id)) chain.splice(1, 0, planned(extra, own));
  return chain;
}

/** Judge and synthesis run on the service's keys only. */
function staffAssignment(
  ctx: SeatingContext,
  staff: { engine: string; backup?: string },
  simStandIn: string,
  notes: string[],
): StaffAssignment {
  if (ctx.simOnly)
    return {
      designed: staff.engine,
      chain: chainOf(ctx, isSimEngine(staff.engine) ? staff.engine : simStandIn, new Set(), simStandIn, []),
    };
  return {
    designed: staff.engine,
    chain: withNamedBackup(ctx, chainOf(ctx, staff.engine, new Set(), simStandIn, notes), staff.backup, new Set()),
  };
}

/**
 * The chain of seat `index` of a `seatTier` row designed on `designed` (with the mode's `backup` for it): the one rule
 * for who answers a seat, used by every call's plan and by `list_engines`' `answers`.
 */
export function seatChain(
  ctx: SeatingContext,
  seat: { designed: string; backup?: string | null; seatTier: Tier; index: number },
  notes: string[] = [],
): SeatedEngine[] {
  const { designed } = seat;
  const simStandIn = `sim/${SIM_NAMES[seat.index % SIM_NAMES.length]}-${seat.seatTier}`;
  return ctx.simOnly
    ? chainOf(ctx, isSimEngine(designed) ? designed : simStandIn, new Set(), simStandIn, [])
    : withNamedBackup(ctx, chainOf(ctx, designed, ctx.ownFamilies, simStandIn, notes), seat.backup, ctx.ownFamilies);
}

export function seatingFor(config: ModeConfig, tier: Tier, lane: Lane, ctx: SeatingContext): Seating {
  const notes: string[] = [];
  const seatTier: Tier = lane === 'express' ? 'experience' : tier;
  const row = designedRow(config, tier, lane);
  const seats = row.seats.map((designed, i): SeatAssignment => ({
    role: ROLES[i],
    designed,
    chain: seatChain(ctx, { designed, backup: row.backups?.[i], seatTier, index: i }, notes),
    ...(row.tunings?.[i] && { tuning: row.tunings[i] }),
  }));
  return {
    seats,
    judge: staffAssignment(ctx, config.staff.judge, SIM_JUDGE, notes),
    synthesis: staffAssignment(ctx, config.staff.synthesis, SIM_SYNTHESIS, notes),
    notes,
  };
}
