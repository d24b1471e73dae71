import type { AggregationRecord } from './aggregation';
import type { Classification, Lane } from './classifier';
import type { Form } from './form';
import type { Judgment } from './judge';
import type { SeatTuning, Tier } from './modes';
import type { TranscriptDeletedReason } from './retention';

/**
 * What one deliberation produced: the single domain model both Form serialisers, the receipt and the
 * idempotent replay are built from. Money is integer micro-dollars; times are ISO strings (workflow-safe).
 */
export type SeatRole = 'seat1' | 'seat2' | 'seat3';
export type Finish = 'stop' | 'length';
export type FinishReason = Finish | 'cost_cap';
/** `cancelled` (issue 40): stopped by its caller, billed for the calls that answered before it stopped. */
export type ReceiptStatus = 'succeeded' | 'capped' | 'failed' | 'cancelled';
export type Payer = 'service' | 'own_keys' | 'plan';
export type JudgedBy = 'express_lane' | 'heuristic' | 'llm';
export type CallSource = 'service' | 'own_key';

/** The failure type of a seat call its quorum's grace cut (activities/quorum-rounds.ts): late, not failed. */
export const QUORUM_LATE = 'QuorumLate';

/** One seat's answer in one round: the row a receipt lists per seat and round. */
export interface SeatPass {
  role: SeatRole;
  round: number;
  modelUsed: string;
  originalModel: string | null;
  fallbackUsed: boolean;
  tokensIn: number;
  tokensOut: number;
  startedAt: string;
  endedAt: string;
  /** The final attempt only. */
  latencyMs: number;
  judgeScore: number | null;
  isBest: boolean;
  source: CallSource;
  realCostMicros: number;
  /** Platform fee rate in parts per million (50,000 = 5%). */
  feeRatePpm: number;
  feeMicros: number;
  content: string;
  finish: Finish;
  /** The mode's tuning of the seat, as it was asked (absent when the mode sets none). */
  tuning?: SeatTuning;
  /**
   * Set on the row of a seat a quorum left behind (issue 40 item 6): why. Its call was cancelled and is billed as
   * docs/money.md says; its content is empty and it is not an answer of its round.
   */
  late?: string;
}

export interface StaffCall {
  modelUsed: string | null;
  latencyMs: number | null;
  fallbackUsed: boolean;
  originalModel: string | null;
}

/**
 * The classifier model's call (spec 01: request-level counters include the classifier's tokens): in the call's usage
 * and billed like any engine call, on the service's keys, whether or not its reply could be read.
 */
export interface ClassifierCall {
  modelUsed: string;
  tokensIn: number;
  tokensOut: number;
  reasoningTokens: number | null;
  realCostMicros: number;
  latencyMs: number;
}

export interface Unavailable {
  role: string;
  reason: string;
}

export interface Substitution {
  role: SeatRole;
  original: string;
  used: string;
  reason: string;
}

export interface ContestedPassage {
  seat: SeatRole;
  quote: string;
  why: string;
}

export interface RoundSummary {
  round: number;
  seats: { role: SeatRole; model: string; score: number | null }[];
  divergence: number | null;
  converged: boolean | null;
}

export interface Money {
  gatewayMicros: number;
  platformFeeMicros: number;
  modeFeeMicros: number;
  /** Form B: the part over the ceiling, credited back. */
  capCreditMicros: number;
  billedMicros: number;
  /** null: the call had no ceiling (a connected app's call on a plan). */
  ceilingMicros: number | null;
}

export interface Outcome {
  requestId: string;
  orgId: string;
  modeId: string;
  ticker: string;
  configHash: string;
  tier: Tier;
  status: ReceiptStatus;
  answer: string;
  finishReason: FinishReason;
  classification: Classification;
  lane: Lane;
  /** Seat passes actually run; a synthesis is not a round. */
  rounds: number;
  seats: number;
  seatsAnswered: number;
  /** null when no judge read the round (express lane). */
  converged: boolean | null;
  divergenceFirst: number | null;
  divergenceFinal: number | null;
  contestedPassage: ContestedPassage | null;
  factualConflict: boolean;
  bestSeat: { role: SeatRole; modelUsed: string; judgeScore: number | null; content: string } | null;
  bestSeatRationale: string;
  bestSeatJudgedBy: JudgedBy;
  deliberation: RoundSummary[];
  /** Seat engine ids that answered (Form A shows their families). */
  engines: string[];
  substitutions: Substitution[];
  seatsUnavailable: Unavailable[];
  staffUnavailable: Unavailable[];
  staff: {
    judge: StaffCall | null;
    synthesis: StaffCall | null;
    grounding: { fired: boolean; modelUsed: string | null };
    /** Absent when the heuristic classified alone (and on outcomes recorded before issue 38 billed the classifier). */
    classifier?: ClassifierCall;
  };
  seatPasses: SeatPass[];
  usage: { promptTokens: number; completionTokens: number; reasoningTokens: number | null };
  money: Money;
  payer: Payer;
  latencyMs: number;
  createdAt: string;
  completedAt: string;
  /** How the answer was made (issue 52); absent on a mode without `aggregation` and on the express lane. */
  aggregation?: AggregationRecord<SeatRole>;
  /** Set once the texts were blanked (issue 41 item 5, migration 030's blank_transcript); the figures stay. */
  transcriptDeleted?: { at: string; reason: TranscriptDeletedReason };
}

/** One seat across the deliberation: what the mode designed there, its latest answer, and why engines failed it. */
export interface SeatRecord {
  role: SeatRole;
  designed: string;
  latest: SeatPass | null;
  failures: string[];
  /** A first wave agreed and this seat was never asked (issue 52): not billed, not unavailable. */
  notAsked?: boolean;
}

/**
 * What a panel did, before money and identity: the panel's result and the outcome assembly's input. A test run
 * scores it; a deliberation bills and settles the outcome assembled from it.
 */
export interface PanelResult {
  seats: SeatRecord[];
  passes: SeatPass[];
  /** The billed rows of seats a quorum left behind, after the answers on the receipt. */
  late: SeatPass[];
  rounds: number;
  deliberation: RoundSummary[];
  /** The last round's judgment, null when no judge read a round (express lane). */
  judgment: Judgment | null;
  /** The anonymous label each seat had in that judgment. */
  labels: Partial<Record<SeatRole, string>>;
  judgedBy: JudgedBy;
  divergenceFirst: number | null;
  /** The seat whose answer won; null when no seat answered. */
  best: SeatRole | null;
  answer: string;
  finish: Finish;
  staff: Outcome['staff'];
  staffUnavailable: Unavailable[];
  /** Why engines of the design are not in their chains (from the plan). */
  notes: string[];
  /** Seeds the judge's answer order, recorded so the order can be reproduced. */
  judgeSeed: number;
  /** How the answer was made, on a mode with `aggregation` (issue 52). */
  aggregation?: AggregationRecord<SeatRole>;
}

/** What a settle records: the outcome, and how to bill it. Kept on the request when the database refused it. */
export interface Settlement {
  outcome: Outcome;
  form: Form;
  /** A live key's call is charged; a test key's bills nothing. */
  billed: boolean;
  /** The mode version that ran (the receipt names it). */
  modeVersion: number;
}
