import type { Classification, Lane } from './classifier';
import type { CostMeter } from './cost-meter';
import { bill, type Ceiling } from './fees';
import type { Form } from './form';
import type { ResolvedMode, Tier } from './modes';
import type {
  ClassifierCall,
  ContestedPassage,
  Outcome,
  PanelResult,
  SeatPass,
  SeatRecord,
  SeatRole,
  StaffCall,
  Substitution,
  Unavailable,
} from './outcome';

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
  panel: PanelResult;
  /** The classifier model's call, when one answered (the meter has counted it). */
  classifierCall?: ClassifierCall;
  meter: CostMeter;
  createdAt: string;
  startedMs: number;
  completedMs: number;
}

/** Seats that never answered, with every engine's failure. */
export function unavailableSeats(seats: readonly SeatRecord[]): Unavailable[] {
  return seats
    .filter((s) => !s.latest && !s.notAsked)
    .map((s) => ({ role: s.role, reason: s.failures.join('; ') || 'no engine could run' }));
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

function roleOfLabel(labels: PanelResult['labels'], label: string): SeatRole | undefined {
  return (Object.entries(labels) as [SeatRole, string][]).find(([, l]) => l === label)?.[0];
}

/** The judge's contested passage, named by seat instead of the anonymous label it was shown. */
function contestedPassage(panel: PanelResult, best: SeatRole): ContestedPassage | null {
  const c = panel.judgment?.contested;
  return c ? { seat: roleOfLabel(panel.labels, c.label) ?? best, quote: c.quote, why: c.why } : null;
}

/** The judge's reasoning with "answer B" turned into the seat it was. */
function rationale(panel: PanelResult): string {
  if (!panel.judgment) return 'Express lane: one seat answered alone.';
  return panel.judgment.why.replace(/\banswer ([A-C])\b/gi, (m, l: string) => roleOfLabel(panel.labels, l.toUpperCase()) ?? m);
}

export function assembleOutcome(a: AssemblyInput): Outcome {
  const { panel, meter } = a;
  const bestRole = panel.best;
  const best = panel.seats.find((s) => s.role === bestRole)?.latest;
  if (!bestRole || !best) throw new Error('an outcome needs an answering seat');
  // `is_best_seat` marks one row: the answer the judge chose, the best seat's latest pass (its pass in the last
  // round judged). Synthesis may then rewrite the answer from it; the row the judge chose is still this one.
  const passes = [...panel.passes, ...panel.late].map((p) => ({
    ...p,
    isBest: !p.late && p.role === bestRole && p.round === best.round,
    ...(a.onPlan ? { feeRatePpm: 0, feeMicros: 0 } : {}),
  }));
  const { money, capped: billCapped } = moneyOf(a, meter.modeFeeMicros());
  const capped = a.form === 'A' ? meter.capped || billCapped : billCapped;
  return {
    requestId: a.requestId,
    orgId: a.orgId,
    modeId: a.mode.id,
    ticker: a.mode.ticker,
    configHash: a.mode.configHash,
    tier: a.tier,
    status: capped ? 'capped' : 'succeeded',
    answer: panel.answer,
    // `length` outranks `cost_cap`; Form B has no `cost_cap`.
    finishReason: panel.finish === 'length' ? 'length' : a.form === 'A' && capped ? 'cost_cap' : 'stop',
    classification: a.classification,
    lane: a.lane,
    rounds: panel.rounds,
    seats: panel.seats.length,
    seatsAnswered: panel.seats.filter((s) => s.latest).length,
    converged: panel.judgment ? panel.judgment.converged : null,
    divergenceFirst: panel.divergenceFirst,
    divergenceFinal: panel.judgment ? panel.judgment.divergence : null,
    contestedPassage: contestedPassage(panel, bestRole),
    factualConflict: panel.judgment?.factualConflict ?? false,
    bestSeat: { role: bestRole, modelUsed: best.modelUsed, judgeScore: best.judgeScore, content: best.content },
    bestSeatRationale: rationale(panel),
    bestSeatJudgedBy: panel.judgedBy,
    deliberation: panel.deliberation,
    engines: [...new Set(panel.passes.map((p) => p.modelUsed))],
    substitutions: substitutions(panel.seats, panel.notes),
    seatsUnavailable: unavailableSeats(panel.seats),
    staffUnavailable: panel.staffUnavailable,
    staff: a.classifierCall ? { ...panel.staff, classifier: a.classifierCall } : panel.staff,
    seatPasses: passes,
    usage: { promptTokens: meter.tokensIn, completionTokens: meter.tokensOut, reasoningTokens: meter.reasoningTokens },
    money,
    payer: a.onPlan ? 'plan' : passes.some((p) => p.source === 'own_key') ? 'own_keys' : 'service',
    latencyMs: a.completedMs - a.startedMs,
    createdAt: a.createdAt,
    completedAt: new Date(a.completedMs).toISOString(),
    ...(panel.aggregation && { aggregation: panel.aggregation }),
  };
}

/** What an outcome bills from its meter: every part zero on a test key's call. */
function moneyOf(a: Omit<AssemblyInput, 'panel'>, modeFeeMicros: number): { money: Outcome['money']; capped: boolean } {
  const { meter } = a;
  const parts = a.billed
    ? { gatewayMicros: meter.gatewayMicros, platformFeeMicros: meter.platformFeeMicros, modeFeeMicros }
    : { gatewayMicros: 0, platformFeeMicros: 0, modeFeeMicros: 0 };
  const billed = bill(a.form, { ...parts, ceilingMicros: a.ceilingMicros });
  return {
    money: { ...parts, capCreditMicros: billed.capCreditMicros, billedMicros: billed.billedMicros, ceilingMicros: a.ceilingMicros },
    capped: billed.capped,
  };
}

/** What a cancelled deliberation ran before it stopped (issue 40 item 3). */
export interface CancelledInput extends Omit<AssemblyInput, 'panel'> {
  /** The seat passes that answered before the cancel, in order. */
  passes: readonly SeatPass[];
  /** The judge's call, when one answered before the cancel (its tokens are in the meter). */
  judge: StaffCall | null;
  /** Seats the call was given (answered or not). */
  seats: number;
}

/**
 * A cancelled call's outcome: no answer, every engine call that answered before the cancel billed at the spec's rates
 * (engines at cost on the service's keys and the platform fee, as the meter counted them) and nothing more. Form B's
 * mode fee is per token, so it is charged on the tokens that ran; Form A's is a price per answered call by depth, and
 * no answer was given, so none is charged. The ceiling holds as on any call.
 */
export function assembleCancelledOutcome(a: CancelledInput): Outcome {
  const { meter } = a;
  const { money } = moneyOf(a, a.form === 'B' ? meter.modeFeeMicros() : 0);
  const passes = a.passes.map((p) => ({ ...p, isBest: false, ...(a.onPlan ? { feeRatePpm: 0, feeMicros: 0 } : {}) }));
  return {
    requestId: a.requestId,
    orgId: a.orgId,
    modeId: a.mode.id,
    ticker: a.mode.ticker,
    configHash: a.mode.configHash,
    tier: a.tier,
    status: 'cancelled',
    answer: '',
    finishReason: 'stop',
    classification: a.classification,
    lane: a.lane,
    rounds: Math.max(0, ...passes.map((p) => p.round)),
    seats: a.seats,
    seatsAnswered: new Set(passes.map((p) => p.role)).size,
    converged: null,
    divergenceFirst: null,
    divergenceFinal: null,
    contestedPassage: null,
    factualConflict: false,
    bestSeat: null,
    bestSeatRationale: 'Cancelled by the caller before an answer was chosen.',
    bestSeatJudgedBy: a.lane === 'express' ? 'express_lane' : 'heuristic',
    deliberation: [],
    engines: [...new Set(passes.map((p) => p.modelUsed))],
    substitutions: [],
    seatsUnavailable: [],
    staffUnavailable: [],
    staff: {
      judge: a.judge,
      // The panel ends with its synthesis: a cancel after it leaves the answer to settle (workflows/deliberation.ts).
      synthesis: null,
      grounding: { fired: false, modelUsed: null },
      ...(a.classifierCall ? { classifier: a.classifierCall } : {}),
    },
    seatPasses: passes,
    usage: { promptTokens: meter.tokensIn, completionTokens: meter.tokensOut, reasoningTokens: meter.reasoningTokens },
    money,
    payer: a.onPlan ? 'plan' : passes.some((p) => p.source === 'own_key') ? 'own_keys' : 'service',
    latencyMs: a.completedMs - a.startedMs,
    createdAt: a.createdAt,
    completedAt: new Date(a.completedMs).toISOString(),
  };
}
