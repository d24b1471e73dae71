import type { Classification, Lane } from './classifier';
import type { Tier } from './modes';

/**
 * What one deliberation produced: the single domain model both Form serialisers, the receipt and the
 * idempotent replay are built from. Money is integer micro-dollars; times are ISO strings (workflow-safe).
 */
export type SeatRole = 'seat1' | 'seat2' | 'seat3';
export type Finish = 'stop' | 'length';
export type FinishReason = Finish | 'cost_cap';
export type ReceiptStatus = 'succeeded' | 'capped' | 'failed';
export type Payer = 'service' | 'own_keys' | 'plan';
export type JudgedBy = 'express_lane' | 'heuristic' | 'llm';
export type CallSource = 'service' | 'own_key';

export interface SeatRow {
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
}

export interface StaffCall {
  modelUsed: string | null;
  latencyMs: number | null;
  fallbackUsed: boolean;
  originalModel: string | null;
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
  ceilingMicros: number;
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
  staff: { judge: StaffCall | null; synthesis: StaffCall | null; grounding: { fired: boolean; modelUsed: string | null } };
  seatRows: SeatRow[];
  usage: { promptTokens: number; completionTokens: number; reasoningTokens: number | null };
  money: Money;
  payer: Payer;
  latencyMs: number;
  createdAt: string;
  completedAt: string;
}
