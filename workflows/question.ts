import { isCancellation, proxyActivities } from '@temporalio/workflow';
import type { BenchmarkActivities, RunQuestion } from '../activities/benchmark';
import type { DeliberationActivities, EngineCallInput, EngineCallResult } from '../activities/deliberation';
import { CostMeter } from '../domain/cost-meter';
import { questionAnswerKind } from '../domain/aggregation';
import { majorityVote, questionSeats, sampleAnswers, type QuestionArms, type QuestionCosts } from '../domain/equal-cost';
import type { Form } from '../domain/form';
import type { ChatMessage } from '../domain/messages';
import type { ResolvedMode } from '../domain/modes';
import type { PanelResult } from '../domain/outcome';
import { answerKey, checkAnswer } from '../domain/questions/check';
import type { TierLineup } from '../domain/run-lineup';
import { answerLabels, presentationOrder, readRunVerdict, runJudgePrompt, type JudgingProtocol } from '../domain/run-judging';
import { runVerdictSchema } from '../domain/reply-schemas';
import { BUCKET_DEPTH, type JudgmentRecord, type QuestionResult } from '../domain/runs';
import { aggregationPrompt, seatPrompt } from '../domain/prompts';
import { firstAnswering } from './engine-chain';
import { ENGINE_CALL } from './engine-call-policy';
import { hedged } from './hedge';
import { runPanel } from './panel';

/** One question of a run (DESIGN §10): the mode answers as a panel, the baseline alone, the judges compare them blind. */
export interface QuestionInput {
  runId: string;
  orgId: string;
  form: Form;
  mode: ResolvedMode;
  question: RunQuestion;
  /** Named `tierPlan` in recorded histories, so it keeps that name. */
  tierPlan: TierLineup;
  protocol: JudgingProtocol;
  repeats: number;
  /** Seeds every judge's presentation order; the run id, so the orders are reproducible from the run. */
  orderSeed: string;
  /** Engine calls still out after this long are hedged (see hedge.ts). */
  hedgeAfterMs?: number;
  /** The equal-cost arms' k (issue 39 item 2): the baseline's engine answers this many times in all; absent: no arms. */
  equalCostSamples?: number;
}

export interface QuestionOutcome {
  questionId: string;
  bucket: RunQuestion['bucket'];
}

// The baseline and the run's judges are engine calls like a deliberation's (ENGINE_CALL); a judge that fails for
// good leaves its verdict unread, counted in the batch.
const { seat, synthesize } = proxyActivities<DeliberationActivities>(ENGINE_CALL);
const { runJudge } = proxyActivities<BenchmarkActivities>(ENGINE_CALL);
// The result row is what the run is for: its write retries until Postgres takes it (it is idempotent by question).
const { recordQuestion } = proxyActivities<BenchmarkActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', maximumInterval: '30 seconds' },
});

/** A run judge's verdict is a short JSON object. */
const RUN_JUDGE_MAX_OUTPUT = 300;
/** Answers are kept for the operator to read, not whole essays. */
const STORED_ANSWER_CHARS = 4_000;

async function orNull<T>(work: Promise<T>): Promise<T | null> {
  try {
    return await work;
  } catch (err) {
    if (isCancellation(err)) throw err;
    return null;
  }
}

/** What the mode and the baseline are both asked, and what `sim` engines answer by (never sent to a provider). */
interface Asked {
  messages: ChatMessage[];
  knownAnswer: NonNullable<EngineCallInput['knownAnswer']>;
}

/** The mode's answer: its panel at the question's depth. A run is priced up front: the meter only counts, it never stops a step. */
function modeAnswers(input: QuestionInput, asked: Asked, meter: CostMeter): Promise<PanelResult> {
  return runPanel({
    orgId: input.orgId,
    messages: asked.messages,
    promptTokens: input.question.promptTokens,
    config: input.mode.config,
    lane: 'panel',
    seating: input.tierPlan.plan,
    ground: false,
    meter,
    judgeSeed: Math.floor(Math.random() * 2 ** 31),
    knownAnswer: asked.knownAnswer,
    hedgeAfterMs: input.hedgeAfterMs,
    // How the seats' answers are read where the mode votes them (issue 52): the question's own kind.
    answerKind: questionAnswerKind(input.question),
  });
}

/**
 * The baseline's engine answering alone: once for the spec's baseline (no seed, as always), and again under seeds
 * 1, 2, … for the equal-cost arms' further samples (a seed draws another answer where the protocol takes one; others
 * sample at their default temperature). Null when the call fails for good.
 */
function baselineAnswers(input: QuestionInput, asked: Asked, seed?: number): Promise<EngineCallResult | null> {
  const { baseline } = input.tierPlan;
  return orNull(
    hedged(
      (attempt) =>
        seat({
          orgId: input.orgId,
          engineId: baseline.engineId,
          ownKey: baseline.ownKey,
          messages: seatPrompt(asked.messages, []),
          maxOutputTokens: input.mode.config.seatMaxOutputTokens,
          knownAnswer: asked.knownAnswer,
          attempt: attempt || undefined,
          ...(seed !== undefined && { seed }),
        }),
      input.hedgeAfterMs,
    ),
  );
}

/** The equal-cost arms' samples beyond the baseline's own answer (which is the first). */
function moreSamples(input: QuestionInput, asked: Asked): Promise<(EngineCallResult | null)[]> {
  const more = Math.max(0, (input.equalCostSamples ?? 0) - 1);
  return Promise.all(Array.from({ length: more }, (_, i) => baselineAnswers(input, asked, i + 1)));
}

/**
 * The equal-cost arms over the samples (issue 39 item 2): their majority vote, and Self-MoA's aggregation by the
 * mode's synthesis engine (its chain, as the panel's synthesis). Each arm costs its samples (and the aggregation) and
 * takes the slowest sample's time (plus the aggregation's).
 */
async function equalCostArms(input: QuestionInput, asked: Asked, samples: (EngineCallResult | null)[]): Promise<QuestionArms> {
  const q = input.question;
  const answered = samples.filter((s): s is EngineCallResult => s !== null);
  const costMicros = answered.reduce((n, s) => n + s.costMicros, 0);
  const latencyMs = Math.max(0, ...answered.map((s) => s.latencyMs));
  const arm = (text: string, extraCost = 0, extraMs = 0): QuestionArms['selfMoa'] => ({
    answer: text.slice(0, STORED_ANSWER_CHARS),
    extracted: answerKey(text, q) ?? null,
    correct: checkAnswer(text, q.answer, q),
    costMicros: costMicros + extraCost,
    latencyMs: latencyMs + extraMs,
  });
  const vote = majorityVote(
    answered.map((s) => s.text),
    q,
  );
  const arms: QuestionArms = {
    samples: samples.length,
    answered: answered.length,
    // The first sample is the baseline's answer, already counted as the baseline's.
    addedMicros: costMicros - (samples[0]?.costMicros ?? 0),
    selfMoa: null,
    majorityVote: vote && { ...(arm(answered[vote.index].text) as NonNullable<QuestionArms['selfMoa']>), votes: vote.votes },
    sampleAnswers: sampleAnswers(samples, q),
  };
  if (answered.length === 0) return arms;
  const prompt = aggregationPrompt(
    asked.messages,
    answered.map((s, i) => ({ label: String.fromCharCode(65 + i), text: s.text })),
  );
  const aggregated = await firstAnswering(
    input.tierPlan.plan.synthesis.chain,
    async (engine) => ({
      answer: await hedged(
        (attempt) =>
          synthesize({
            orgId: input.orgId,
            engineId: engine.engineId,
            ownKey: false,
            messages: prompt,
            maxOutputTokens: input.mode.config.seatMaxOutputTokens * 2,
            attempt: attempt || undefined,
            lane: 'panel',
          }),
        input.hedgeAfterMs,
      ),
    }),
    // An aggregation no engine of the chain gives leaves the arm without an answer on this question.
    { failed: () => undefined },
  );
  if (aggregated) {
    arms.selfMoa = arm(aggregated.text, aggregated.costMicros, aggregated.latencyMs);
    arms.addedMicros += aggregated.costMicros;
  }
  return arms;
}

/** A step's result and how long the workflow waited for it. */
async function timed<T>(work: Promise<T>): Promise<{ value: T; ms: number }> {
  const started = Date.now();
  const value = await work;
  return { value, ms: Date.now() - started };
}

/** The judges' verdicts and what they cost: every judge, every repeat, each in its own order; an unread verdict is null. */
async function judgeAnswers(input: QuestionInput, answers: string[]): Promise<{ judgments: JudgmentRecord[]; costMicros: number }> {
  const { question: q, orgId } = input;
  const calls: { record: Omit<JudgmentRecord, 'verdict'>; shown: number; modeAt: number; call: Promise<EngineCallResult | null> }[] = [];
  for (const judge of input.tierPlan.judges) {
    for (let repeat = 1; repeat <= input.repeats; repeat++) {
      const order = presentationOrder(input.orderSeed, q.id, judge.slot, repeat, answers.length);
      const prompt = runJudgePrompt(
        input.protocol,
        q.question,
        q.answer,
        order.map((i) => answers[i]),
      );
      calls.push({
        record: { slot: judge.slot, engineId: judge.engineId, repeat, order },
        shown: order.length,
        modeAt: order.indexOf(0),
        call: orNull(
          hedged(
            (attempt) =>
              runJudge({
                orgId,
                engineId: judge.engineId,
                ownKey: false,
                messages: prompt,
                maxOutputTokens: RUN_JUDGE_MAX_OUTPUT,
                attempt: attempt || undefined,
                reply: runVerdictSchema(answerLabels(order.length)),
              }),
            input.hedgeAfterMs,
          ),
        ),
      });
    }
  }
  const replies = await Promise.all(calls.map((c) => c.call));
  const judgments: JudgmentRecord[] = calls.map((c, i) => {
    const reply = replies[i];
    return { ...c.record, verdict: reply ? (readRunVerdict(reply.text, c.shown, c.modeAt) ?? null) : null };
  });
  return { judgments, costMicros: replies.reduce((n, r) => n + (r?.costMicros ?? 0), 0) };
}

/** One question of a run (DESIGN §10): the mode and the baseline answer side by side, the judges compare them blind. */
export async function questionWorkflow(input: QuestionInput): Promise<QuestionOutcome> {
  const { question: q, tierPlan, mode } = input;
  const startedMs = Date.now();
  const asked: Asked = { messages: [{ role: 'user', content: q.question }], knownAnswer: { answer: q.answer, difficulty: q.bucket } };
  const meter = new CostMeter({
    form: input.form,
    fees: mode.config.fees,
    depth: BUCKET_DEPTH[q.bucket],
    lane: 'panel',
    ceilingMicros: Number.MAX_SAFE_INTEGER,
  });

  // The baseline is one engine alone, so it answers while the panel deliberates; so do the equal-cost arms' samples.
  const [{ value: panel, ms: modeMs }, solo, more] = await Promise.all([
    timed(modeAnswers(input, asked, meter)),
    baselineAnswers(input, asked),
    moreSamples(input, asked),
  ]);
  const modeAnswer = panel.answer;
  const baselineAnswer = solo?.text ?? '';
  // Index 0 is always the mode's answer; plurality adds each seat engine's own first answer.
  const answers =
    input.protocol === 'pairwise'
      ? [modeAnswer, baselineAnswer]
      : [modeAnswer, ...panel.passes.filter((p) => p.round === 1).map((p) => p.content)];
  const [judged, arms] = await Promise.all([
    judgeAnswers(input, answers),
    input.equalCostSamples ? equalCostArms(input, asked, [solo, ...more]) : undefined,
  ]);
  const costs: QuestionCosts = {
    modeMicros: meter.realCostMicros,
    modeSeatsMicros: panel.passes.reduce((n, p) => n + p.realCostMicros, 0),
    baselineMicros: solo?.costMicros ?? 0,
    modeLatencyMs: modeMs,
    baselineLatencyMs: solo?.latencyMs ?? 0,
  };

  const result: QuestionResult = {
    questionId: q.id,
    bucket: q.bucket,
    tier: tierPlan.tier,
    cluster: q.cluster,
    question: q.question,
    reference: q.answer,
    ...(q.source && { source: q.source }),
    modeAnswer: modeAnswer.slice(0, STORED_ANSWER_CHARS),
    baselineAnswer: baselineAnswer.slice(0, STORED_ANSWER_CHARS),
    baselineEngine: tierPlan.baseline.engineId,
    modeCorrect: checkAnswer(modeAnswer, q.answer, q),
    baselineCorrect: checkAnswer(baselineAnswer, q.answer, q),
    judgments: judged.judgments,
    recusals: tierPlan.judges.flatMap((j) =>
      j.recusal ? [{ slot: j.slot, engineId: j.recusal.engineId, replacedBy: j.recusal.replacedBy }] : [],
    ),
    costMicros: meter.realCostMicros + (solo?.costMicros ?? 0) + judged.costMicros + (arms?.addedMicros ?? 0),
    latencyMs: Date.now() - startedMs,
    costs,
    ...(arms && { arms }),
    // The seats' own answers and their vote beside the answer returned (issue 52 item 1).
    seats: questionSeats(panel, q),
  };
  await recordQuestion({ runId: input.runId, result });
  return { questionId: q.id, bucket: q.bucket };
}
