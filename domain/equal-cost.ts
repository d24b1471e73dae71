import { plurality, questionAnswerKind, readAnswer, tally, type AnswerKindName, type SeatBallot } from './aggregation';
import type { Tier } from './modes';
import type { PanelResult } from './outcome';
import { answerKey, checkAnswer } from './questions/check';
import type { Question } from './questions/types';
import { pairedWinRateDifference, wilsonInterval, type Interval, type PairedDifference } from './statistics';

/**
 * Equal-cost baselines (issue 39 item 2): beside the spec's baseline (the strongest seat answering once), a run asks
 * the same engine k times, k chosen so its samples cost what the mode costs per question, its judge, ballot and
 * synthesis included (issue 52 item 2: the seats' share alone let the panel spend more than its arms), and aggregates
 * them two ways: Self-MoA (arXiv 2502.00674: the samples handed to one aggregation call, on the mode's own synthesis
 * engine) and, where answers are checkable, their majority vote (arXiv 2508.17536). Beside them, every question
 * records its seats' own answers and their vote (issue 52 item 1), so what the mode's final step does with the seats'
 * answers is measured on the same outputs. Pure: how k is chosen, the votes, and the figures over a run's questions.
 */

/** At least two samples, or there is nothing to aggregate. */
export const MIN_SAMPLES = 2;
/** At most this many, so a mode of many cheap seats against a far cheaper engine cannot make a run's questions unbounded. */
export const MAX_SAMPLES = 12;
/** Recorded questions of the mode version (per tier) before their costs replace the quote's projection. */
export const RECORDED_MIN_QUESTIONS = 20;

/** How k was chosen for one tier of a run: shown in the poll and the dry run, so anyone can redo the division. */
export interface SamplePlan {
  tier: Tier;
  /** The mode's strongest seat engine: the spec's baseline, and the engine every sample asks. */
  engineId: string;
  /**
   * k: ⌈modeMicros ÷ sampleMicros⌉ within the bounds (`samplesAtEqualCost`). On a plan without `modeMicros` (launched
   * before issue 52) it was chosen at the seats' cost alone, rounded down.
   */
  samples: number;
  /** `recorded`: means over the mode version's earlier questions; `projected`: the quote's arithmetic. */
  basis: 'recorded' | 'projected';
  /** Questions the recorded means are over (0 when projected). */
  recordedQuestions: number;
  /**
   * What the mode costs per question, every engine call of it (seats, judge, ballot, synthesis), in µ$ (a mean when
   * recorded). Absent on plans launched before issue 52.
   */
  modeMicros?: number;
  /** The seats' share of it, and one answer of the engine, in µ$ (means when recorded). */
  modeSeatsMicros: number;
  sampleMicros: number;
  /** k at the seats' cost alone, ⌈modeSeatsMicros ÷ sampleMicros⌉ within the bounds: shown beside k. Absent before issue 52. */
  samplesSeatsOnly?: number;
}

/**
 * k = ⌈a cost ÷ one sample's cost⌉, within [MIN_SAMPLES, MAX_SAMPLES]: rounded up, so the arm is never given less money
 * than the mode spends (issue 52: the mode must be at least as good as the same money spent on one engine, at a cost
 * no higher than the arm's).
 */
export function samplesAtEqualCost(costMicros: number, sampleMicros: number): number {
  if (!(sampleMicros > 0)) return MIN_SAMPLES;
  return Math.min(MAX_SAMPLES, Math.max(MIN_SAMPLES, Math.ceil(costMicros / sampleMicros)));
}

/** A tier's k at the mode's whole cost per question, and at its seats' alone beside it (issue 52 item 2). */
export function equalCostSamples(costs: { modeMicros: number; modeSeatsMicros: number; sampleMicros: number }): {
  samples: number;
  samplesSeatsOnly: number;
} {
  return {
    samples: samplesAtEqualCost(costs.modeMicros, costs.sampleMicros),
    samplesSeatsOnly: samplesAtEqualCost(costs.modeSeatsMicros, costs.sampleMicros),
  };
}

/** One arm's answer to one question, as `include=questions` shows it. */
export interface ArmAnswer {
  answer: string;
  /** The answer as the majority vote reads it (`answerKey`), null when unreadable; absent on rows before issue 52. */
  extracted?: string | null;
  correct: boolean;
  costMicros: number;
  latencyMs: number;
}

/** What a question's equal-cost arms gave; the baseline's own answer is the first of the samples. */
export interface QuestionArms {
  samples: number;
  /** Samples that answered (a sample that failed for good is left out of both arms). */
  answered: number;
  /** What the arms' own calls cost: the samples after the baseline's answer, and the aggregation. */
  addedMicros: number;
  /** Null when no sample answered or the aggregation call failed. */
  selfMoa: ArmAnswer | null;
  /** Null when no sample answered; with none readable, the first sample with no votes (so wrong, as any arm's unreadable answer is). */
  majorityVote: (ArmAnswer & { votes: number }) | null;
  /**
   * Each sample in order (the first is the baseline's answer): the key its majority vote counts (`answerKey`, null
   * when unreadable) and the checker on its text; null for a sample that failed for good. Absent on rows written
   * before issue 52, so any aggregation of the samples can be recomputed from the row.
   */
  sampleAnswers?: (SampleAnswer | null)[];
}

/** One sample's answer as the majority vote reads it. */
export interface SampleAnswer {
  answer: string | null;
  correct: boolean;
}

/** Each sample's key and correctness, in order; null where the sample failed (the arms leave it out). */
export function sampleAnswers(
  samples: readonly ({ text: string } | null)[],
  q: Pick<Question, 'answer' | 'answerKind' | 'choices'>,
): (SampleAnswer | null)[] {
  return samples.map((s) => s && { answer: answerKey(s.text, q) ?? null, correct: checkAnswer(s.text, q.answer, q) });
}

/** What the mode and its baseline cost and took on one question: the recorded figures k is chosen from. */
export interface QuestionCosts {
  modeMicros: number;
  /** The seats' share of `modeMicros` (the rest is judge and synthesis). */
  modeSeatsMicros: number;
  baselineMicros: number;
  modeLatencyMs: number;
  baselineLatencyMs: number;
}

/**
 * The most common answer among the samples (by the checker's key), the earliest on a tie. With none readable, the
 * first sample and no votes: the arm then answers (wrongly) on every question where a sample came back, so its
 * accuracy has the same denominator as the other arms'. Null only when there is no sample.
 */
export function majorityVote(
  samples: readonly string[],
  asked: Pick<Question, 'answerKind' | 'choices'>,
): { index: number; votes: number } | null {
  if (samples.length === 0) return null;
  // The panel's own count (domain/aggregation.ts): most votes first, an equal count to the earliest answer.
  const top = tally(
    samples.map((text, i) => {
      const answer = answerKey(text, asked) ?? null;
      return { role: String(i), answer, readBy: answer === null ? null : ('text' as const), cut: false };
    }),
  )[0];
  return top ? { index: Number(top.seats[0]), votes: top.votes } : { index: 0, votes: 0 };
}

export const ARMS = ['mode', 'baseline', 'self_moa', 'majority_vote'] as const;
export type Arm = (typeof ARMS)[number];

export interface ArmSummary {
  arm: Arm;
  /** Questions this arm answered with a readable result. */
  questions: number;
  accuracy: number;
  /** Wilson's 95% interval over the questions. */
  accuracyInterval: Interval;
  costPerQuestionMicros: number;
  latencyMsMedian: number;
  /**
   * The mode's accuracy minus this arm's on the questions both answered, with the clustered 95% interval of
   * pairedWinRateDifference (clusters: the questions' templates or sources); null for the mode itself.
   */
  modeMinusArm: PairedDifference | null;
}

/** The figures a question's row carries for the arms (runs written before issue 39 carry none). */
export interface ArmRow {
  questionId: string;
  cluster: string;
  modeCorrect: boolean;
  baselineCorrect: boolean;
  costs?: QuestionCosts;
  arms?: QuestionArms;
}

interface Scored {
  question: string;
  cluster: string;
  correct: boolean;
  costMicros: number;
  latencyMs: number;
}

function armScores(rows: readonly ArmRow[], arm: Arm): Scored[] {
  return rows.flatMap((r): Scored[] => {
    const at = (correct: boolean, costMicros: number, latencyMs: number): Scored[] => [
      { question: r.questionId, cluster: r.cluster, correct, costMicros, latencyMs },
    ];
    const costs = r.costs as QuestionCosts;
    if (arm === 'mode') return at(r.modeCorrect, costs.modeMicros, costs.modeLatencyMs);
    if (arm === 'baseline') return at(r.baselineCorrect, costs.baselineMicros, costs.baselineLatencyMs);
    const answer = arm === 'self_moa' ? r.arms?.selfMoa : r.arms?.majorityVote;
    return answer ? at(answer.correct, answer.costMicros, answer.latencyMs) : [];
  });
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length === 0 ? 0 : sorted.length % 2 ? sorted[mid] : Math.round((sorted[mid - 1] + sorted[mid]) / 2);
}

/** The mode minus an arm, paired by question: pairedWinRateDifference's statistic, its reasons said of arms. */
function armDifference(
  mode: readonly { question: string; cluster: string; score: number }[],
  arm: readonly { question: string; cluster: string; score: number }[],
): PairedDifference {
  const d = pairedWinRateDifference(mode, arm);
  return d.clusters < 2 ? { ...d, noInterval: 'Fewer than two clusters of questions were answered by both the mode and the arm.' } : d;
}

/** Every arm's accuracy, cost and latency over the questions that ran the arms; null when none did. */
export function equalCostSummary(rows: readonly ArmRow[]): ArmSummary[] | null {
  const armed = rows.filter((r) => r.arms && r.costs);
  if (armed.length === 0) return null;
  const mode = armScores(armed, 'mode');
  const paired = (s: readonly Scored[]): { question: string; cluster: string; score: number }[] =>
    s.map((x) => ({ question: x.question, cluster: x.cluster, score: Number(x.correct) }));
  return ARMS.map((arm): ArmSummary => {
    const scores = armScores(armed, arm);
    const right = scores.filter((s) => s.correct).length;
    const n = scores.length;
    return {
      arm,
      questions: n,
      accuracy: n === 0 ? 0 : right / n,
      accuracyInterval: wilsonInterval(right, n),
      costPerQuestionMicros: n === 0 ? 0 : Math.round(scores.reduce((t, s) => t + s.costMicros, 0) / n),
      latencyMsMedian: median(scores.map((s) => s.latencyMs)),
      modeMinusArm: arm === 'mode' ? null : armDifference(paired(mode), paired(scores)),
    };
  });
}

/**
 * One seat's answer to a run's question (issue 52 item 1): its pass of the panel's final round, read by the
 * question's answer kind (`readAnswer`), and the question's checker on its text.
 */
export interface SeatAnswer {
  role: string;
  /** The engine that gave the seat's final-round pass; null when the seat gave none in that round. */
  engineId: string | null;
  /** The key its text gives (`number 42`, `B`, `yes`…); null when its text gives none or it did not answer. */
  answer: string | null;
  correct: boolean;
  /** A first wave agreed and this seat was never asked (issue 52's early stop): it abstains. */
  notAsked?: true;
}

/**
 * How the seats' own vote was decided: one answer had the most votes (`plurality`); two or more tied and the first
 * tied seat's answer (in seat order) stands (`tie_first`); no seat's answer could be read, and the first answering
 * seat's text stands with no votes (`none_readable`, wrong as any unreadable answer is, as the majority-vote arm's);
 * no seat answered at all (`no_answer`).
 */
export const SEATS_VOTE_DECIDED = ['plurality', 'tie_first', 'none_readable', 'no_answer'] as const;
export type SeatsVoteDecided = (typeof SEATS_VOTE_DECIDED)[number];

/** The seats' plurality over their own answers, beside the answer the mode returned. */
export interface SeatsVote {
  /** The answer voted; null when none was readable. */
  answer: string | null;
  votes: number;
  /** The seat whose text stands for the vote (the first of the answer's seats); null when no seat answered. */
  role: string | null;
  /** The checker on that seat's text. */
  correct: boolean;
  decidedBy: SeatsVoteDecided;
}

/** What a question's seats answered and voted (stored on its row; absent on rows written before issue 52). */
export interface QuestionSeats {
  /** The kind the seats' texts were read by (`questionAnswerKind`). */
  answerKind: AnswerKindName;
  /** The panel's final round, whose passes these are. */
  round: number;
  seats: SeatAnswer[];
  vote: SeatsVote;
  /** The answer the mode returned, read the same way; its correctness is the row's `modeCorrect`. */
  modeAnswer: string | null;
}

/**
 * A question's seats and their vote, on the very outputs the mode's final step read: each seat's pass of the final
 * round (a seat that gave none, or was never asked, abstains), voted by plurality (domain/aggregation.ts).
 */
export function questionSeats(
  panel: Pick<PanelResult, 'seats' | 'passes' | 'rounds' | 'answer'>,
  q: Pick<Question, 'answer' | 'answerKind' | 'choices'>,
): QuestionSeats {
  const kind = questionAnswerKind(q);
  const seats = panel.seats.map((s) => {
    const pass = panel.passes.find((p) => p.role === s.role && p.round === panel.rounds);
    const seat: SeatAnswer = {
      role: s.role,
      engineId: pass?.modelUsed ?? null,
      answer: pass ? (readAnswer(pass.content, kind) ?? null) : null,
      correct: pass ? checkAnswer(pass.content, q.answer, q) : false,
      ...(s.notAsked && { notAsked: true as const }),
    };
    return seat;
  });
  const ballots: SeatBallot[] = seats.map((s) => ({
    role: s.role,
    answer: s.answer,
    readBy: s.answer === null ? null : 'text',
    cut: false,
  }));
  const counted = plurality(ballots);
  const seat = (role: string): SeatAnswer => seats.find((s) => s.role === role) as SeatAnswer;
  let vote: SeatsVote;
  if (counted.kind === 'winner' || counted.kind === 'tie') {
    const top = counted.kind === 'winner' ? counted.top : counted.tied[0];
    const role = top.seats[0];
    vote = {
      answer: top.answer,
      votes: top.votes,
      role,
      correct: seat(role).correct,
      decidedBy: counted.kind === 'winner' ? 'plurality' : 'tie_first',
    };
  } else {
    const first = seats.find((s) => s.engineId !== null);
    vote = first
      ? { answer: null, votes: 0, role: first.role, correct: first.correct, decidedBy: 'none_readable' }
      : { answer: null, votes: 0, role: null, correct: false, decidedBy: 'no_answer' };
  }
  return { answerKind: kind.kind, round: panel.rounds, seats, vote, modeAnswer: readAnswer(panel.answer, kind) ?? null };
}

/** An accuracy over a set of questions, with Wilson's 95% interval. */
export interface PairedAccuracy {
  correct: number;
  accuracy: number;
  accuracyInterval: Interval;
}

/**
 * What the mode's final step does with its seats' answers (issue 52 item 1), over the questions that recorded them:
 * the answer returned against the seats' own vote, paired on the same seat outputs.
 */
export interface SeatsVoteSummary {
  questions: number;
  /** The answer the mode returned. */
  mode: PairedAccuracy;
  /** The seats' plurality over their own final answers. */
  seatsVote: PairedAccuracy;
  /**
   * The mode's accuracy minus the vote's, paired by question, with the clustered 95% interval of
   * pairedWinRateDifference (clusters: the questions' templates or sources), as the equal-cost arms'.
   */
  modeMinusVote: PairedDifference;
  /** Questions where the vote was right and the returned answer wrong: what the final step threw away. */
  lost: number;
  /** Questions where the vote was wrong and the returned answer right: what the final step added. */
  gained: number;
  /** Questions whose vote was a tie (the first tied seat's answer stood), and with no readable seat. */
  ties: number;
  unreadable: number;
}

function pairedAccuracy(correct: readonly boolean[]): PairedAccuracy {
  const right = correct.filter(Boolean).length;
  return {
    correct: right,
    accuracy: correct.length === 0 ? 0 : right / correct.length,
    accuracyInterval: wilsonInterval(right, correct.length),
  };
}

/** The returned answer against the seats' vote, over the rows that recorded their seats; null when none did. */
export function seatsVoteSummary(
  rows: readonly { questionId: string; cluster: string; modeCorrect: boolean; seats?: QuestionSeats }[],
): SeatsVoteSummary | null {
  const seated = rows.filter((r): r is typeof r & { seats: QuestionSeats } => r.seats !== undefined);
  if (seated.length === 0) return null;
  const scores = (correct: (r: (typeof seated)[number]) => boolean): { question: string; cluster: string; score: number }[] =>
    seated.map((r) => ({ question: r.questionId, cluster: r.cluster, score: Number(correct(r)) }));
  const d = pairedWinRateDifference(
    scores((r) => r.modeCorrect),
    scores((r) => r.seats.vote.correct),
  );
  return {
    questions: seated.length,
    mode: pairedAccuracy(seated.map((r) => r.modeCorrect)),
    seatsVote: pairedAccuracy(seated.map((r) => r.seats.vote.correct)),
    modeMinusVote: d.clusters < 2 ? { ...d, noInterval: 'Fewer than two clusters of questions recorded their seats’ answers.' } : d,
    lost: seated.filter((r) => r.seats.vote.correct && !r.modeCorrect).length,
    gained: seated.filter((r) => !r.seats.vote.correct && r.modeCorrect).length,
    ties: seated.filter((r) => r.seats.vote.decidedBy === 'tie_first').length,
    unreadable: seated.filter((r) => r.seats.vote.decidedBy === 'none_readable' || r.seats.vote.decidedBy === 'no_answer').length,
  };
}
