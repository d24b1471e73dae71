import type { ArmSummary, QuestionArms, SamplePlan } from '../../domain/equal-cost';
import { usd, type JsonObject } from './json';

/**
 * The equal-cost arms as every Form shows them (issue 39 item 2): the launch's and dry run's `svc.baselines`, the
 * poll's `baselines` and each question's `arms`. One shape, so a client reads them alike wherever they appear.
 */

const round4 = (x: number): number => Math.round(x * 10_000) / 10_000;

/** How k was chosen per tier: anyone can redo the division from these figures. */
export function samplePlansJson(plans: readonly SamplePlan[]): JsonObject[] {
  return plans.map((p) => ({
    tier: p.tier,
    engine: p.engineId,
    samples: p.samples,
    basis: p.basis,
    recorded_questions: p.recordedQuestions,
    mode_seats_cost_usd: usd(p.modeSeatsMicros),
    sample_cost_usd: usd(p.sampleMicros),
  }));
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
    mode_minus_arm: a.modeMinusArm && {
      pairs: a.modeMinusArm.pairs,
      difference: round4(a.modeMinusArm.difference),
      ci_low: a.modeMinusArm.interval && round4(a.modeMinusArm.interval.low),
      ci_high: a.modeMinusArm.interval && round4(a.modeMinusArm.interval.high),
      confidence: 0.95,
      degrees_of_freedom: a.modeMinusArm.degreesOfFreedom,
      no_interval_reason: a.modeMinusArm.noInterval,
    },
  }));
}

/** A question's arms: each answer (its text only where the question's texts are shown), whether it was right, its cost. */
export function questionArmsJson(arms: QuestionArms, texts: boolean): JsonObject {
  const arm = (a: QuestionArms['selfMoa']): JsonObject | null =>
    a && {
      answer: texts ? a.answer : null,
      answer_chars: a.answer.length,
      correct: a.correct,
      cost_usd: usd(a.costMicros),
      latency_ms: a.latencyMs,
    };
  return {
    samples: arms.samples,
    samples_answered: arms.answered,
    self_moa: arm(arms.selfMoa),
    majority_vote: arms.majorityVote && { ...arm(arms.majorityVote), votes: arms.majorityVote.votes },
  };
}
