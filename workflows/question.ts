import { isCancellation, proxyActivities } from '@temporalio/workflow';
import type { BenchmarkActivities, RunQuestion } from '../activities/benchmark';
import type { DeliberationActivities, EngineCallInput, EngineCallResult } from '../activities/deliberation';
import { CostMeter } from '../domain/cost-meter';
import type { Form } from '../domain/form';
import type { ChatMessage } from '../domain/messages';
import type { ResolvedMode } from '../domain/modes';
import type { PanelResult } from '../domain/outcome';
import { checkAnswer } from '../domain/questions/check';
import type { TierLineup } from '../domain/run-lineup';
import { answerLabels, presentationOrder, readRunVerdict, runJudgePrompt, type JudgingProtocol } from '../domain/run-judging';
import { runVerdictSchema } from '../domain/reply-schemas';
import { BUCKET_DEPTH, type JudgmentRecord, type QuestionResult } from '../domain/runs';
import { seatPrompt } from '../domain/prompts';
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
}

export interface QuestionOutcome {
  questionId: string;
  bucket: RunQuestion['bucket'];
}

// The baseline and the run's judges are engine calls like a deliberation's (ENGINE_CALL); a judge that fails for
// good leaves its verdict unread, counted in the batch.
const { seat } = proxyActivities<DeliberationActivities>(ENGINE_CALL);
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
  });
}

/** The baseline's answer: one engine alone; null when it fails for good. */
function baselineAnswers(input: QuestionInput, asked: Asked): Promise<EngineCallResult | null> {
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
        }),
      input.hedgeAfterMs,
    ),
  );
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

  // The baseline is one engine alone, so it answers while the panel deliberates.
  const [panel, solo] = await Promise.all([modeAnswers(input, asked, meter), baselineAnswers(input, asked)]);
  const modeAnswer = panel.answer;
  const baselineAnswer = solo?.text ?? '';
  // Index 0 is always the mode's answer; plurality adds each seat engine's own first answer.
  const answers =
    input.protocol === 'pairwise'
      ? [modeAnswer, baselineAnswer]
      : [modeAnswer, ...panel.passes.filter((p) => p.round === 1).map((p) => p.content)];
  const judged = await judgeAnswers(input, answers);

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
    costMicros: meter.realCostMicros + (solo?.costMicros ?? 0) + judged.costMicros,
    latencyMs: Date.now() - startedMs,
  };
  await recordQuestion({ runId: input.runId, result });
  return { questionId: q.id, bucket: q.bucket };
}
