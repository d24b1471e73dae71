import { isCancellation, proxyActivities } from '@temporalio/workflow';
import type { BenchmarkActivities, RunQuestion } from '../activities/benchmark';
import type { DeliberationActivities, EngineCallResult } from '../activities/deliberation';
import { CostMeter } from '../domain/cost-meter';
import type { Form } from '../domain/form';
import type { ChatMessage } from '../domain/messages';
import type { ResolvedMode } from '../domain/modes';
import { checkAnswer } from '../domain/questions/check';
import type { TierPlan } from '../domain/run-plan';
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
  tierPlan: TierPlan;
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

export async function questionWorkflow(input: QuestionInput): Promise<QuestionOutcome> {
  const { question: q, tierPlan, mode, orgId } = input;
  const startedMs = Date.now();
  const messages: ChatMessage[] = [{ role: 'user', content: q.question }];
  const knownAnswer = { answer: q.answer, difficulty: q.bucket };
  // A run is priced up front: the meter only counts what the engines cost, it never stops a step.
  const meter = new CostMeter({
    form: input.form,
    fees: mode.config.fees,
    depth: BUCKET_DEPTH[q.bucket],
    lane: 'panel',
    ceilingMicros: Number.MAX_SAFE_INTEGER,
  });
  const { baseline } = tierPlan;

  // The baseline is one engine alone, so it answers while the panel deliberates.
  const [panel, solo] = await Promise.all([
    runPanel({
      orgId,
      messages,
      promptTokens: q.promptTokens,
      config: mode.config,
      lane: 'panel',
      plan: tierPlan.plan,
      ground: false,
      meter,
      judgeSeed: Math.floor(Math.random() * 2 ** 31),
      knownAnswer,
      hedgeAfterMs: input.hedgeAfterMs,
    }),
    orNull(
      hedged(
        (attempt) =>
          seat({
            orgId,
            engineId: baseline.engineId,
            ownKey: baseline.ownKey,
            messages: seatPrompt(messages, []),
            maxOutputTokens: mode.config.seatMaxOutputTokens,
            knownAnswer,
            attempt: attempt || undefined,
          }),
        input.hedgeAfterMs,
      ),
    ),
  ]);
  const modeAnswer = panel.answer;
  const baselineAnswer = solo?.text ?? '';
  // Index 0 is always the mode's answer; plurality adds each seat engine's own first answer.
  const answers =
    input.protocol === 'pairwise'
      ? [modeAnswer, baselineAnswer]
      : [modeAnswer, ...panel.passes.filter((p) => p.round === 1).map((p) => p.content)];

  const calls: { record: Omit<JudgmentRecord, 'verdict'>; shown: number; modeAt: number; call: Promise<EngineCallResult | null> }[] = [];
  for (const judge of tierPlan.judges) {
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

  const result: QuestionResult = {
    questionId: q.id,
    bucket: q.bucket,
    tier: tierPlan.tier,
    cluster: q.cluster,
    question: q.question,
    reference: q.answer,
    modeAnswer: modeAnswer.slice(0, STORED_ANSWER_CHARS),
    baselineAnswer: baselineAnswer.slice(0, STORED_ANSWER_CHARS),
    baselineEngine: baseline.engineId,
    modeCorrect: checkAnswer(modeAnswer, q.answer),
    baselineCorrect: checkAnswer(baselineAnswer, q.answer),
    judgments,
    recusals: tierPlan.judges.flatMap((j) =>
      j.recusal ? [{ slot: j.slot, engineId: j.recusal.engineId, replacedBy: j.recusal.replacedBy }] : [],
    ),
    costMicros: meter.realCostMicros + (solo?.costMicros ?? 0) + replies.reduce((n, r) => n + (r?.costMicros ?? 0), 0),
    latencyMs: Date.now() - startedMs,
  };
  await recordQuestion({ runId: input.runId, result });
  return { questionId: q.id, bucket: q.bucket };
}
