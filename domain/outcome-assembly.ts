import type { Classification, Lane } from './classifier';
import type { CostMeter } from './cost-meter';
import { bill, type Ceiling } from './fees';
import type { Form } from './form';
import type { ResolvedMode, Tier } from './modes';
import type { ContestedPassage, Outcome, PanelRun, SeatRecord, SeatRole, Substitution, Unavailable } from './outcome';

/**
 * The outcome of a deliberation, assembled from what the panel did and what the meter counted: the one domain
 * model the receipt, both Forms and an idempotent replay are built from. Pure, so it is tested without Temporal.
 */

export interface AssemblyInput {
  requestId: string;
  orgId: string;
  form: Form;
  /** A test key bills nothing: every part of its bill is zero, so the billing identities still hold. */
  billed: boolean;
  mode: ResolvedMode;
  tier: Tier;
  classification: Classification;
  lane: Lane;
  ceilingMicros: Ceiling;
  /**
   * A connected app's call on a plan (spec 01 rule 11): the plan pays the engines' real cost only (the meter counted
   * no fee, and the ceiling is null), so no seat row carries a platform fee either, and the payer is `plan`.
   */
  onPlan?: boolean;
  run: PanelRun;
  meter: CostMeter;
  createdAt: string;
  startedMs: number;
  completedMs: number;
}

/** Seats that never answered, with every engine's failure. */
export function unavailableSeats(seats: readonly SeatRecord[]): Unavailable[] {
  return seats.filter((s) => !s.latest).map((s) => ({ role: s.role, reason: s.failures.join('; ') || 'no engine could run' }));
}

/** Seats that answered on another engine than designed, and why the designed one did not. */
export function substitutions(seats: readonly SeatRecord[], notes: readonly string[]): Substitution[] {
  return seats.flatMap((s) =>
    s.latest && s.latest.modelUsed !== s.designed
      ? [
          {
            role: s.role,
            original: s.designed,
            used: s.latest.modelUsed,
            reason: s.failures.join('; ') || notes.find((n) => n.startsWith(s.designed)) || 'the designed engine is not available here',
          },
        ]
      : [],
  );
}

function roleOfLabel(labels: PanelRun['labels'], label: string): SeatRole | undefined {
  return (Object.entries(labels) as [SeatRole, string][]).find(([, l]) => l === label)?.[0];
}

/** The judge's contested passage, named by seat instead of the anonymous label it was shown. */
function contestedPassage(run: PanelRun, best: SeatRole): ContestedPassage | null {
  const c = run.judgment?.contested;
  return c ? { seat: roleOfLabel(run.labels, c.label) ?? best, quote: c.quote, why: c.why } : null;
}

/** The judge's reasoning with "answer B" turned into the seat it was. */
function rationale(run: PanelRun): string {
  if (!run.judgment) return 'Express lane: one seat answered alone.';
  return run.judgment.why.replace(/\banswer ([A-C])\b/gi, (m, l: string) => roleOfLabel(run.labels, l.toUpperCase()) ?? m);
}

export function assembleOutcome(a: AssemblyInput): Outcome {
  const { run, meter } = a;
  const bestRole = run.best;
  const best = run.seats.find((s) => s.role === bestRole)?.latest;
  if (!bestRole || !best) throw new Error('an outcome needs an answering seat');
  // `is_best_seat` marks one row: the answer the judge chose, the best seat's latest pass (its pass in the last
  // round judged). Synthesis may then rewrite the answer from it; the row the judge chose is still this one.
  const passes = run.passes.map((p) => ({
    ...p,
    isBest: p.role === bestRole && p.round === best.round,
    ...(a.onPlan ? { feeRatePpm: 0, feeMicros: 0 } : {}),
  }));
  const modeFee = meter.modeFeeMicros();
  const parts = a.billed
    ? { gatewayMicros: meter.gatewayMicros, platformFeeMicros: meter.platformFeeMicros, modeFeeMicros: modeFee }
    : { gatewayMicros: 0, platformFeeMicros: 0, modeFeeMicros: 0 };
  const billed = bill(a.form, { ...parts, ceilingMicros: a.ceilingMicros });
  const capped = a.form === 'A' ? meter.capped || billed.capped : billed.capped;
  return {
    requestId: a.requestId,
    orgId: a.orgId,
    modeId: a.mode.id,
    ticker: a.mode.ticker,
    configHash: a.mode.configHash,
    tier: a.tier,
    status: capped ? 'capped' : 'succeeded',
    answer: run.answer,
    // `length` outranks `cost_cap`; Form B has no `cost_cap`.
    finishReason: run.finish === 'length' ? 'length' : a.form === 'A' && capped ? 'cost_cap' : 'stop',
    classification: a.classification,
    lane: a.lane,
    rounds: run.rounds,
    seats: run.seats.length,
    seatsAnswered: run.seats.filter((s) => s.latest).length,
    converged: run.judgment ? run.judgment.converged : null,
    divergenceFirst: run.divergenceFirst,
    divergenceFinal: run.judgment ? run.judgment.divergence : null,
    contestedPassage: contestedPassage(run, bestRole),
    factualConflict: run.judgment?.factualConflict ?? false,
    bestSeat: { role: bestRole, modelUsed: best.modelUsed, judgeScore: best.judgeScore, content: best.content },
    bestSeatRationale: rationale(run),
    bestSeatJudgedBy: run.judgedBy,
    deliberation: run.deliberation,
    engines: [...new Set(passes.map((p) => p.modelUsed))],
    substitutions: substitutions(run.seats, run.notes),
    seatsUnavailable: unavailableSeats(run.seats),
    staffUnavailable: run.staffUnavailable,
    staff: run.staff,
    seatPasses: passes,
    usage: { promptTokens: meter.tokensIn, completionTokens: meter.tokensOut, reasoningTokens: meter.reasoningTokens },
    money: { ...parts, capCreditMicros: billed.capCreditMicros, billedMicros: billed.billedMicros, ceilingMicros: a.ceilingMicros },
    payer: a.onPlan ? 'plan' : passes.some((p) => p.source === 'own_key') ? 'own_keys' : 'service',
    latencyMs: a.completedMs - a.startedMs,
    createdAt: a.createdAt,
    completedAt: new Date(a.completedMs).toISOString(),
  };
}
