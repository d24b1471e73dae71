import { ActivityFailure, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { DeliberationActivities, EngineCallInput, EngineCallResult } from '../activities/deliberation';
import type { Lane } from '../domain/classifier';
import type { CostMeter, ProjectedCall } from '../domain/cost-meter';
import { PLATFORM_FEE_PPM, platformFeeMicros } from '../domain/fees';
import { heuristicJudgment, type Judgment } from '../domain/judge';
import { lastUserText, type ChatMessage } from '../domain/messages';
import type { ModeConfig } from '../domain/modes';
import type { PanelRun, RoundSummary, SeatPass, StaffCall, Unavailable } from '../domain/outcome';
import { seededRandom, shuffled } from '../domain/prng';
import { critiquePrompt, judgePrompt, seatPrompt, synthesisPrompt, type LabelledAnswer } from '../domain/prompts';
import type { Plan, SeatPlan } from '../domain/seat-plan';
import { ENGINE_CALL } from './engine-call-policy';
import { hedged } from './hedge';

/**
 * The panel: seats, judge, critique rounds and synthesis, with no billing. A function the deliberation workflow
 * and a test run's question workflow both call, not a child workflow: a child would add a workflow start, its
 * own history and two server round trips to every deliberation, where the panel needs none of a child's
 * isolation (it holds no money; its caller settles or scores what it returns).
 */

// Seat, judge and synthesis calls: see ENGINE_CALL (a permanent failure moves the seat to its backup).
const { seat, judge, synthesize } = proxyActivities<DeliberationActivities>(ENGINE_CALL);
// Grounding is a search: short, and the panel goes on without it if it keeps failing.
const { ground } = proxyActivities<DeliberationActivities>({ startToCloseTimeout: '20 seconds', retry: { maximumAttempts: 2 } });

const LABELS = ['A', 'B', 'C'] as const;
/** A judgment is a short structured verdict. */
const JUDGE_MAX_OUTPUT = 600;
/**
 * Form A's ceiling is checked before each step from token counts the panel already has (the prompt, each answer's
 * reported output, the grounding snippets); this bounds what Quorum's own instructions add around them (the
 * longest, the judge's, is about 130 tokens).
 */
const PROMPT_TEMPLATE_TOKENS = 150;

export interface PanelInput {
  orgId: string;
  messages: ChatMessage[];
  /** Counted by the API with the engines' tokenizer (the workflow has none). */
  promptTokens: number;
  config: ModeConfig;
  lane: Lane;
  plan: Plan;
  /** Search before the seats answer (the classifier asked for it and the mode allows it). */
  ground: boolean;
  meter: CostMeter;
  /** Seeds the judge's answer order; drawn by the caller from the workflow's deterministic random. */
  judgeSeed: number;
  /** A run's question: every seat pass carries its reference for `sim` engines (never sent to a provider). */
  knownAnswer?: EngineCallInput['knownAnswer'];
  /** Runs hedge slow engine calls after this long (see hedge.ts); deliberations do not. */
  hedgeAfterMs?: number;
  /** Told of each step as it happens (a seat answered, judging, a critique round, synthesis); no effect on the run. */
  onStep?: (step: PanelStep) => void;
}

export type PanelStep =
  | { stage: 'seats' | 'critique'; round: number; seats: number; seatsAnswered: number }
  | { stage: 'judging'; round: number }
  | { stage: 'synthesising' };

interface SeatState {
  plan: SeatPlan;
  /** Position in the seat's engine chain; moves forward on a permanent failure. */
  at: number;
  failures: string[];
  latest: SeatPass | null;
}

function failureReason(err: unknown): string {
  if (err instanceof ActivityFailure && err.cause) return err.cause.message;
  return err instanceof Error ? err.message : String(err);
}

function seatPass(s: SeatState, round: number, first: EngineCallResult, final: EngineCallResult): SeatPass {
  const cost = first === final ? first.costMicros : first.costMicros + final.costMicros;
  const fallback = final.engineId !== s.plan.designed;
  return {
    role: s.plan.role,
    round,
    modelUsed: final.engineId,
    originalModel: fallback ? s.plan.designed : null,
    fallbackUsed: fallback,
    tokensIn: final.tokensIn,
    tokensOut: final.tokensOut,
    startedAt: first.startedAt,
    endedAt: final.endedAt,
    latencyMs: final.latencyMs,
    judgeScore: null,
    isBest: false,
    source: final.source,
    realCostMicros: cost,
    feeRatePpm: PLATFORM_FEE_PPM[final.source],
    feeMicros: platformFeeMicros(cost, final.source),
    content: final.text,
    finish: final.finish,
  };
}

function staffCall(r: EngineCallResult, designed: string, latencyMs: number): StaffCall {
  const fallback = r.engineId !== designed;
  return { modelUsed: r.engineId, latencyMs, fallbackUsed: fallback, originalModel: fallback ? designed : null };
}

export async function runPanel(input: PanelInput): Promise<PanelRun> {
  const { config, plan, meter, orgId } = input;
  const seatMax = config.seatMaxOutputTokens;
  const random = seededRandom(input.judgeSeed);
  const staffUnavailable: Unavailable[] = [];
  const passes: SeatPass[] = [];
  const deliberation: RoundSummary[] = [];

  let snippets: string[] = [];
  let snippetTokens = 0;
  let grounding: PanelRun['staff']['grounding'] = { fired: false, modelUsed: null };
  if (input.ground) {
    try {
      const g = await ground({ query: lastUserText(input.messages).slice(0, 500) });
      ({ snippets, tokens: snippetTokens } = g);
      grounding = { fired: g.fired, modelUsed: g.source };
    } catch (err) {
      if (isCancellation(err)) throw err;
    }
  }

  const seats: SeatState[] = plan.seats.map((p) => ({ plan: p, at: 0, failures: [], latest: null }));

  /** One seat's pass: its current engine, then backups on failure; a cut-off answer is retried once with twice the room. */
  const runSeat = async (s: SeatState, round: number, messages: ChatMessage[], inRound: number): Promise<SeatPass | undefined> => {
    // Nothing of the seat's design can run here, and no stand-in may (production): say so on the receipt.
    if (s.plan.chain.length === 0 && s.failures.length === 0) s.failures.push(`${s.plan.designed}: no engine of this design can run here`);
    while (s.at < s.plan.chain.length) {
      const engine = s.plan.chain[s.at];
      // lane and round label the worker's metrics; the call ignores them.
      const call = {
        orgId,
        engineId: engine.engineId,
        ownKey: engine.ownKey,
        messages,
        knownAnswer: input.knownAnswer,
        lane: input.lane,
        round,
      };
      try {
        const first = await hedged(
          (attempt) => seat({ ...call, maxOutputTokens: seatMax, attempt: attempt || undefined }),
          input.hedgeAfterMs,
        );
        meter.charge(first);
        let final = first;
        if (first.finish === 'length') {
          final = await seat({ ...call, maxOutputTokens: seatMax * 2 });
          meter.charge(final);
        }
        const pass = seatPass(s, round, first, final);
        passes.push(pass);
        s.latest = pass;
        input.onStep?.({
          stage: round === 1 ? 'seats' : 'critique',
          round,
          seats: inRound,
          seatsAnswered: passes.filter((p) => p.round === round).length,
        });
        return pass;
      } catch (err) {
        if (isCancellation(err)) throw err;
        s.failures.push(`${engine.engineId}: ${failureReason(err)}`);
        s.at += 1;
      }
    }
    return undefined;
  };

  /** Everything every answer adds to a prompt that reads them all. */
  const readingAll = (answered: readonly SeatState[]): number =>
    input.promptTokens + answered.reduce((n, s) => n + (s.latest?.tokensOut ?? 0), 0) + PROMPT_TEMPLATE_TOKENS;

  let judgeCall: StaffCall | null = null;
  let judgeLatency = 0;
  let judgedBy: PanelRun['judgedBy'] = input.lane === 'express' ? 'express_lane' : 'heuristic';
  let labels: PanelRun['labels'] = {};

  /** The judge sees anonymous labels in an order drawn from the recorded seed; the heuristic judges when no engine can. */
  const judgeRound = async (answered: SeatState[], allowEngine: boolean): Promise<Judgment> => {
    input.onStep?.({ stage: 'judging', round: rounds });
    const order = shuffled(answered, random);
    labels = Object.fromEntries(order.map((s, i) => [s.plan.role, LABELS[i]]));
    const labelled: LabelledAnswer[] = order.map((s, i) => ({ label: LABELS[i], text: s.latest?.content ?? '' }));
    const prompt = judgePrompt(input.messages, labelled);
    const tokensIn = readingAll(answered);
    for (const engine of allowEngine ? plan.judge.chain : []) {
      if (!meter.affords([{ engine, tokensIn, maxOut: JUDGE_MAX_OUTPUT }])) break;
      try {
        const r = await hedged(
          (attempt) =>
            judge({
              orgId,
              engineId: engine.engineId,
              ownKey: false,
              messages: prompt,
              maxOutputTokens: JUDGE_MAX_OUTPUT,
              labels: labelled.map((a) => a.label),
              attempt: attempt || undefined,
              lane: input.lane,
              round: rounds,
            }),
          input.hedgeAfterMs,
        );
        meter.charge(r);
        judgeLatency += r.latencyMs;
        judgeCall = staffCall(r, plan.judge.designed, judgeLatency);
        if (r.judgment) {
          judgedBy = 'llm';
          return r.judgment;
        }
        staffUnavailable.push({ role: 'judge', reason: `${r.engineId} gave no usable verdict` });
      } catch (err) {
        if (isCancellation(err)) throw err;
        staffUnavailable.push({ role: 'judge', reason: `${engine.engineId}: ${failureReason(err)}` });
      }
    }
    judgedBy = 'heuristic';
    return heuristicJudgment(labelled);
  };

  const recordRound = (round: number, j: Judgment | null): void => {
    const inRound = passes.filter((p) => p.round === round);
    for (const p of inRound) p.judgeScore = j ? (j.scores[labels[p.role] ?? ''] ?? null) : null;
    deliberation.push({
      round,
      seats: inRound.map((p) => ({ role: p.role, model: p.modelUsed, score: p.judgeScore })),
      divergence: j ? j.divergence : null,
      converged: j ? j.converged : null,
    });
  };

  // Round 1: every seat in parallel.
  const round1 = seatPrompt(input.messages, snippets);
  await Promise.all(seats.map((s) => runSeat(s, 1, round1, seats.length)));
  let answered = seats.filter((s) => s.latest);
  let rounds = 1;
  let judgment: Judgment | null = null;
  let divergenceFirst: number | null = null;

  if (answered.length > 0 && input.lane === 'panel') {
    judgment = await judgeRound(answered, true);
    divergenceFirst = judgment.divergence;
    recordRound(1, judgment);

    // Critique rounds, as the mode says: always, or only while the seats are split.
    while (
      rounds < config.rounds &&
      answered.length > 1 &&
      (config.critique === 'always' || (config.critique === 'when_split' && !judgment.converged))
    ) {
      const current = answered;
      const prompts = current.map((s) => {
        const others = current.filter((o) => o !== s).map((o) => ({ label: labels[o.plan.role] ?? '?', text: o.latest?.content ?? '' }));
        return critiquePrompt(input.messages, snippets, s.latest?.content ?? '', others);
      });
      // Each seat reads the question, the snippets and every current answer (its own and the others'), all counted.
      const tokensIn = readingAll(current) + snippetTokens;
      const step: ProjectedCall[] = current.map((s) => ({ engine: s.plan.chain[s.at], tokensIn, maxOut: seatMax }));
      if (!meter.affords(step)) break;
      const revised = await Promise.all(current.map((s, i) => runSeat(s, rounds + 1, prompts[i], current.length)));
      const survivors = current.filter((_, i) => revised[i] !== undefined);
      // No seat could revise: the previous round's answers and judgment stand.
      if (survivors.length === 0) break;
      rounds += 1;
      answered = survivors;
      judgment = await judgeRound(answered, !meter.capped);
      recordRound(rounds, judgment);
    }
  } else if (answered.length > 0) {
    recordRound(1, null);
  }

  const run: PanelRun = {
    seats: seats.map((s) => ({ role: s.plan.role, designed: s.plan.designed, latest: s.latest, failures: s.failures })),
    passes,
    rounds,
    deliberation,
    judgment,
    labels,
    judgedBy,
    divergenceFirst,
    best: null,
    answer: '',
    finish: 'stop',
    staff: { judge: judgeCall, synthesis: null, grounding },
    staffUnavailable,
    notes: plan.notes,
    judgeSeed: input.judgeSeed,
  };
  if (answered.length === 0) return run;

  // The best seat's latest answer (every seat still answering has one).
  const best = (judgment && answered.find((s) => labels[s.plan.role] === judgment?.best)) || answered[0];
  const bestPass = best.latest as SeatPass;
  run.best = bestPass.role;
  run.answer = bestPass.content;
  run.finish = bestPass.finish;

  if (judgment && !(judgment.converged && config.skipSynthesisWhenConverged) && !meter.capped) {
    const labelled = answered
      .map((s) => ({ label: labels[s.plan.role] ?? '?', text: s.latest?.content ?? '' }))
      .sort((a, b) => a.label.localeCompare(b.label));
    input.onStep?.({ stage: 'synthesising' });
    const prompt = synthesisPrompt(input.messages, labelled, judgment.best, judgment.why);
    const tokensIn = readingAll(answered);
    let latency = 0;
    for (const engine of plan.synthesis.chain) {
      if (!meter.affords([{ engine, tokensIn, maxOut: seatMax * 2 }])) break;
      try {
        const r = await hedged(
          (attempt) =>
            synthesize({
              orgId,
              engineId: engine.engineId,
              ownKey: false,
              messages: prompt,
              maxOutputTokens: seatMax * 2,
              attempt: attempt || undefined,
              lane: input.lane,
            }),
          input.hedgeAfterMs,
        );
        meter.charge(r);
        latency += r.latencyMs;
        run.staff.synthesis = staffCall(r, plan.synthesis.designed, latency);
        run.answer = r.text;
        run.finish = r.finish;
        break;
      } catch (err) {
        if (isCancellation(err)) throw err;
        staffUnavailable.push({ role: 'synthesis', reason: `${engine.engineId}: ${failureReason(err)}` });
      }
    }
  }
  return run;
}
