import type { ArmSummary, QuestionArms, QuestionSeats, SamplePlan, SeatsVoteSummary } from '../../domain/equal-cost';
import type { PairedDifference } from '../../domain/statistics';
import { usd, type JsonObject } from './json';

/**
 * The equal-cost arms as every Form shows them (issue 39 item 2): the launch's and dry run's `svc.baselines`, the
 * poll's `baselines` and each question's `arms`. One shape, so a client reads them alike wherever they appear.
 */

const round4 = (x: number): number => Math.round(x * 10_000) / 10_000;

/**
 * How k was chosen per tier: anyone can redo the division from these figures. k is at the mode's whole cost
 * (issue 52 item 2), the seats-only k beside it; a plan launched before that has no whole cost (`mode_cost_usd`
 * null), and its k was the seats-only one.
 */
export function samplePlansJson(plans: readonly SamplePlan[]): JsonObject[] {
  return plans.map((p) => ({
    tier: p.tier,
    engine: p.engineId,
    samples: p.samples,
    samples_seats_only: p.samplesSeatsOnly ?? (p.modeMicros === undefined ? p.samples : null),
    basis: p.basis,
    recorded_questions: p.recordedQuestions,
    mode_cost_usd: p.modeMicros === undefined ? null : usd(p.modeMicros),
    mode_seats_cost_usd: usd(p.modeSeatsMicros),
    sample_cost_usd: usd(p.sampleMicros),
  }));
}

/** A paired difference as the poll shows it: the clustered 95% interval, or why there is none. */
function pairedJson(d: PairedDifference): JsonObject {
  return {
    pairs: d.pairs,
    difference: round4(d.difference),
    ci_low: d.interval && round4(d.interval.low),
    ci_high: d.interval && round4(d.interval.high),
    confidence: 0.95,
    degrees_of_freedom: d.degreesOfFreedom,
    no_interval_reason: d.noInterval,
  };
}

/** Each arm's accuracy (Wilson 95%), cost, latency, and the mode's paired difference against it (clustered 95%). */
export function armsJson(arms: readonly ArmSummary[]): JsonObject[] {
  return arms.map((a) => ({
    arm: a.arm,
    questions: a.questions,
    accuracy: round4(a.accuracy),
    accuracy_ci_low: round4(a.accuracyInterval.low),
    accuracy_ci_high: round4(a.accuracyInterval.high),
    cost_per_question_usd: usd(a.costPerQuestionMicros),
    latency_ms_median: a.latencyMsMedian,
    mode_minus_arm: a.modeMinusArm && pairedJson(a.modeMinusArm),
  }));
}

/** The answer returned against the seats' own vote (issue 52 item 1): each one's accuracy and the paired difference. */
export function seatsVoteJson(s: SeatsVoteSummary): JsonObject {
  const accuracy = (a: SeatsVoteSummary['mode']): JsonObject => ({
    correct: a.correct,
    accuracy: round4(a.accuracy),
    accuracy_ci_low: round4(a.accuracyInterval.low),
    accuracy_ci_high: round4(a.accuracyInterval.high),
  });
  return {
    questions: s.questions,
    mode: accuracy(s.mode),
    seats_vote: accuracy(s.seatsVote),
    mode_minus_vote: pairedJson(s.modeMinusVote),
    lost: s.lost,
    gained: s.gained,
    ties: s.ties,
    unreadable: s.unreadable,
  };
}

/**
 * A question's seats: each one's final answer as read (null while the run is sealed: an answer reveals the
 * question), whether the checker finds it right, and their vote beside the answer the mode returned.
 */
export function questionSeatsJson(s: QuestionSeats, sealed: boolean): JsonObject {
  const shown = (answer: string | null): string | null => (sealed ? null : answer);
  return {
    answer_kind: s.answerKind,
    round: s.round,
    seats: s.seats.map((x) => ({
      role: x.role,
      engine: x.engineId,
      answer: shown(x.answer),
      correct: x.correct,
      not_asked: x.notAsked === true,
    })),
    vote: {
      answer: shown(s.vote.answer),
      votes: s.vote.votes,
      seat: s.vote.role,
      correct: s.vote.correct,
      decided_by: s.vote.decidedBy,
    },
    mode_answer: shown(s.modeAnswer),
  };
}

/**
 * A question's arms: each answer (its text only where the question's texts are shown), whether it was right, its
 * cost; and each sample's answer as the vote read it (null while the run is sealed), null on rows before issue 52.
 */
export function questionArmsJson(arms: QuestionArms, texts: boolean, sealed: boolean): JsonObject {
  const arm = (a: QuestionArms['selfMoa']): JsonObject | null =>
    a && {
      answer: texts ? a.answer : null,
      answer_chars: a.answer.length,
      extracted_answer: sealed ? null : (a.extracted ?? null),
      correct: a.correct,
      cost_usd: usd(a.costMicros),
      latency_ms: a.latencyMs,
    };
  return {
    samples: arms.samples,
    samples_answered: arms.answered,
    self_moa: arm(arms.selfMoa),
    majority_vote: arms.majorityVote && { ...arm(arms.majorityVote), votes: arms.majorityVote.votes },
    sample_answers: arms.sampleAnswers
      ? arms.sampleAnswers.map((a) => a && { answer: sealed ? null : a.answer, correct: a.correct })
      : null,
  };
}
