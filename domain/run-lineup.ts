import { TIER_RANK, type ModeConfig, type Tier } from './modes';
import { assignJudges, type JudgeAssignment, type JudgeSlot, type JudgingProtocol } from './run-judging';
import { isSimEngine, seatingFor, type CatalogEngine, type Seating, type SeatedEngine, type SeatingContext } from './seat-assignment';

/**
 * Who answers and who judges in a run, per tier (DESIGN §10): the mode's panel, the baseline (its strongest seat
 * engine alone, or with `punch_up` the next tier's strongest), and the three judges with self-recusal. Pure; the
 * launch uses it to refuse a run whose engines cannot run (409 `provider_unavailable`), the run's workflow to seat its questions.
 */

export interface RunCatalogEngine extends CatalogEngine {
  maker: string;
  tier: Tier;
}

export interface RunSeatingContext extends SeatingContext {
  find(engineId: string): RunCatalogEngine | undefined;
  catalog: readonly RunCatalogEngine[];
}

export interface TierLineup {
  tier: Tier;
  /** The panel's seating. Named `plan` in the question workflows' recorded input, so it keeps that name. */
  plan: Seating;
  baseline: SeatedEngine;
  judges: JudgeAssignment[];
}

export type RunLineup = { ok: true; tiers: TierLineup[] } | { ok: false; missing: string[] };

export interface RunShape {
  tiers: readonly Tier[];
  punchUp: boolean;
  judges: readonly JudgeSlot[];
  protocol: JudgingProtocol;
}

const NEXT_TIER: Readonly<Record<Tier, Tier>> = { experience: 'plus', plus: 'pro', pro: 'pro' };

/** Strongest first: the higher tier, then the dearer output (the catalog's proxy for capability). */
function byStrength(a: RunCatalogEngine, b: RunCatalogEngine): number {
  return TIER_RANK[b.tier] - TIER_RANK[a.tier] || b.outputUsdPerMtok - a.outputUsdPerMtok || a.id.localeCompare(b.id);
}

/** Each simulated engine stands for a maker of its own, so recusal among `sim` judges means the same engine. */
export function recusalMaker(e: Pick<RunCatalogEngine, 'id' | 'family' | 'maker'>): string {
  return e.family === 'sim' ? e.id : e.maker;
}

/** The baseline answers as a seat would: on the organisation's own provider account when it has one for the family. */
function plannedOf(e: RunCatalogEngine, ctx: RunSeatingContext): SeatedEngine {
  const ownKey = !ctx.simOnly && ctx.ownFamilies.has(e.family);
  return { engineId: e.id, inputUsdPerMtok: e.inputUsdPerMtok, outputUsdPerMtok: e.outputUsdPerMtok, ownKey };
}

/** Real engines of the design that would run on a `sim` stand-in: a live run refuses them rather than simulate. */
function standIns(seating: Seating): string[] {
  const steps = [...seating.seats, seating.judge, seating.synthesis];
  // An empty chain (no stand-in allowed) cannot run either.
  return steps.filter((s) => !isSimEngine(s.designed) && (s.chain.length === 0 || isSimEngine(s.chain[0].engineId))).map((s) => s.designed);
}

function baselineFor(
  config: ModeConfig,
  tier: Tier,
  seating: Seating,
  punchUp: boolean,
  ctx: RunSeatingContext,
): RunCatalogEngine | undefined {
  const known = (ids: readonly string[]): RunCatalogEngine[] => ids.flatMap((id) => ctx.find(id) ?? []);
  if (!punchUp || NEXT_TIER[tier] === tier) return known(seating.seats.flatMap((s) => s.chain[0]?.engineId ?? [])).sort(byStrength)[0];
  const next = NEXT_TIER[tier];
  if (config.tiers[next])
    return known(seatingFor(config, next, 'panel', ctx).seats.flatMap((s) => s.chain[0]?.engineId ?? [])).sort(byStrength)[0];
  const runnable = ctx.catalog.filter((e) => e.tier === next && runsHere(e, ctx));
  return runnable.sort(byStrength)[0];
}

/** A test key's run is all `sim`; a live run uses only real engines the service's keys can run. */
function runsHere(e: RunCatalogEngine, ctx: RunSeatingContext): boolean {
  return ctx.simOnly ? isSimEngine(e.id) : !isSimEngine(e.id) && ctx.serviceCanRun(e.id);
}

/** One judge candidate per maker, strongest first, on the service's keys. */
function judgePool(ctx: RunSeatingContext): RunCatalogEngine[] {
  const seen = new Set<string>();
  return ctx.catalog
    .filter((e) => runsHere(e, ctx))
    .sort(byStrength)
    .filter((e) => {
      const maker = recusalMaker(e);
      if (seen.has(maker)) return false;
      seen.add(maker);
      return true;
    });
}

/** A mode designed on `sim` engines alone is a simulation by design, not a stand-in: its runs are simulated throughout. */
function designedOnSim(config: ModeConfig, tiers: readonly Tier[]): boolean {
  const seats = tiers.flatMap((t) => config.tiers[t]?.seats ?? []);
  return [...seats, config.staff.judge.engine, config.staff.synthesis.engine].every(isSimEngine);
}

export function lineUpRun(config: ModeConfig, shape: RunShape, runCtx: RunSeatingContext): RunLineup {
  const ctx = designedOnSim(config, shape.tiers) ? { ...runCtx, simOnly: true } : runCtx;
  const missing: string[] = [];
  const pool = judgePool(ctx);
  if (pool.length < shape.judges.length)
    missing.push(`judges: ${shape.judges.length} judges of different makers are needed; ${pool.length} can run here`);
  const tiers: TierLineup[] = [];
  // Without enough judges nothing below can be assigned; report what else is missing all the same.
  const enoughJudges = pool.length >= shape.judges.length;
  for (const tier of shape.tiers) {
    const seating = seatingFor(config, tier, 'panel', ctx);
    if (!ctx.simOnly) missing.push(...standIns(seating).map((id) => `${id}: no credentials configured`));
    const baseline = baselineFor(config, tier, seating, shape.punchUp, ctx);
    if (!baseline) {
      missing.push(`baseline for ${tier}: no engine can run`);
      continue;
    }
    const answering = new Set([recusalMaker(baseline)]);
    if (shape.protocol === 'plurality')
      for (const s of seating.seats) {
        const e = s.chain[0] && ctx.find(s.chain[0].engineId);
        if (e) answering.add(recusalMaker(e));
      }
    if (!enoughJudges) continue;
    const judges = assignJudges(
      shape.judges,
      pool.map((e) => ({ engineId: e.id, maker: recusalMaker(e) })),
      answering,
    );
    tiers.push({ tier, plan: seating, baseline: plannedOf(baseline, ctx), judges });
  }
  return missing.length > 0 ? { ok: false, missing: [...new Set(missing)] } : { ok: true, tiers };
}
