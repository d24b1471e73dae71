import {
  ActivityFailure,
  ApplicationFailure,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { DeliberationActivities, EngineCallResult, Plan, PlannedEngine, SeatPlan } from '../activities/deliberation';
import type { Classification } from '../domain/classifier';
import { lastUserText, type ChatMessage } from '../domain/messages';
import { bill, modeFeeMicros, platformFeeMicros, PLATFORM_FEE_PPM } from '../domain/fees';
import { heuristicJudgment, type Judgment } from '../domain/judge';
import type { Tier, ResolvedMode } from '../domain/modes';
import type { Outcome, RoundSummary, SeatRole, SeatRow, StaffCall, Substitution, Unavailable } from '../domain/outcome';
import { engineCostMicros } from '../domain/pricing';
import { seededRandom, shuffled } from '../domain/prng';
import { critiquePrompt, judgePrompt, seatPrompt, synthesisPrompt, type LabelledAnswer } from '../domain/prompts';
import { QuorumLane, QuorumStatus } from './search-attributes';

export interface DeliberationInput {
  requestId: string;
  orgId: string;
  keyMode: 'live' | 'test';
  form: 'A' | 'B';
  mode: ResolvedMode;
  tier: Tier;
  messages: ChatMessage[];
  /** Counted by the API with the engines' tokenizer (the workflow has none). */
  promptTokens: number;
  ceilingMicros: number;
  createdAt: string;
}

// Seat, judge and synthesis calls: the engine layer's own deadline is 180 s, so a try gets a little more;
// a worker that dies mid-call is noticed by the missing heartbeat (10 s) and the call retried elsewhere.
// Transient provider failures (429, 5xx, timeouts) retry with backoff, at most 3 tries per engine; a
// permanent failure is not retried and the seat moves to its backup instead.
const { seat, judge, synthesize } = proxyActivities<DeliberationActivities>({
  startToCloseTimeout: '200 seconds',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '20 seconds', maximumAttempts: 3, nonRetryableErrorTypes: ['EnginePermanent'] },
});
// Grounding is a search: short, and the deliberation goes on without it if it keeps failing.
const { ground } = proxyActivities<DeliberationActivities>({ startToCloseTimeout: '20 seconds', retry: { maximumAttempts: 2 } });
// Short steps (Postgres, and the classifier's small model, capped at 8 s) run as local activities: no extra server
// round trip on the hot path. They retry until they succeed: a database blip must not lose a paid answer.
const { plan, classify, reserve, fail, settle } = proxyLocalActivities<DeliberationActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '10 seconds', nonRetryableErrorTypes: ['QuorumError'] },
});

const LABELS = ['A', 'B', 'C'] as const;

/**
 * Form A's ceiling is checked before each step from token counts the workflow already has (the prompt counted by
 * the API, each answer's reported output, the grounding snippets); this bounds what Quorum's own instructions add
 * around them (the longest, the judge's, is about 130 tokens).
 */
const PROMPT_TEMPLATE_TOKENS = 150;

/** Spec error codes a deliberation can end with after its reservation; each releases the hold. */
type AbandonCode = 'insufficient_balance' | 'mode_resolution_mismatch' | 'mode_unavailable' | 'cost_unreadable';

interface SeatState {
  plan: SeatPlan;
  /** Position in the seat's engine chain; moves forward on a permanent failure. */
  at: number;
  failures: string[];
  answer?: SeatRow;
}

function failureReason(err: unknown): string {
  if (err instanceof ActivityFailure && err.cause) return err.cause.message;
  return err instanceof Error ? err.message : String(err);
}

export async function deliberationWorkflow(input: DeliberationInput): Promise<Outcome> {
  const startedMs = Date.now();
  const { config } = input.mode;
  const live = input.keyMode === 'live';

  const classification: Classification = await classify({ messages: input.messages, engineId: config.staff.classifier?.engine });
  const lane = config.express === 'always' || (config.express === 'auto' && classification.lane === 'express') ? 'express' : 'panel';
  upsertSearchAttributes([{ key: QuorumLane, value: lane }, { key: QuorumStatus, value: 'running' }]);

  /** Ends the call without an answer: the hold is released, the request marked failed, nothing billed. */
  const abandon = async (code: AbandonCode, message: string): Promise<never> => {
    await fail({ orgId: input.orgId, requestId: input.requestId, code });
    upsertSearchAttributes([{ key: QuorumStatus, value: 'failed' }]);
    throw ApplicationFailure.nonRetryable(message, code);
  };

  if (live) {
    try {
      await reserve({ orgId: input.orgId, requestId: input.requestId, amountMicros: input.ceilingMicros });
    } catch (err) {
      if (isCancellation(err)) throw err;
      return abandon('insufficient_balance', failureReason(err));
    }
  }

  // Plan's only non-retryable failure: the mode handed over is not the stored version the API resolved.
  let thePlan: Plan;
  try {
    thePlan = await plan({ orgId: input.orgId, keyMode: input.keyMode, mode: input.mode, tier: input.tier });
  } catch (err) {
    if (isCancellation(err)) throw err;
    return abandon('mode_resolution_mismatch', failureReason(err));
  }

  // Every provider call's cost, as it happens: the Form A ceiling is checked against it before each step.
  let gatewayMicros = 0;
  let platformMicros = 0;
  let tokensIn = 0;
  let tokensOut = 0;
  let reasoningTokens: number | null = null;
  const charge = (r: EngineCallResult): void => {
    gatewayMicros += r.costMicros;
    platformMicros += platformFeeMicros(r.costMicros, r.source);
    tokensIn += r.tokensIn;
    tokensOut += r.tokensOut;
    if (r.reasoningTokens !== null) reasoningTokens = (reasoningTokens ?? 0) + r.reasoningTokens;
  };
  const projectedFee = (): number => modeFeeMicros(input.form, config.fees, { depth: classification.depth, lane, tokensIn, tokensOut });
  let capped = false;
  /** Form A stops before a step that would pass the ceiling; Form B always runs in full. */
  const affordable = (calls: { engine: PlannedEngine; tokensIn: number; maxOut: number }[]): boolean => {
    if (input.form === 'B') return true;
    const step = calls.reduce((sum, c) => {
      const cost = engineCostMicros(c.tokensIn, c.maxOut, c.engine);
      return sum + cost + platformFeeMicros(cost, c.engine.ownKey ? 'own_key' : 'service');
    }, 0);
    if (gatewayMicros + platformMicros + projectedFee() + step <= input.ceilingMicros) return true;
    capped = true;
    return false;
  };

  let snippets: string[] = [];
  let snippetTokens = 0;
  let grounding: Outcome['staff']['grounding'] = { fired: false, modelUsed: null };
  if (classification.grounding && config.grounding === 'auto') {
    const query = lastUserText(input.messages);
    try {
      const g = await ground({ query: query.slice(0, 500) });
      snippets = g.snippets;
      snippetTokens = g.tokens;
      grounding = { fired: g.fired, modelUsed: g.source };
    } catch (err) {
      if (isCancellation(err)) throw err;
    }
  }

  const seats: SeatState[] = (lane === 'express' ? thePlan.seats.slice(0, 1) : thePlan.seats).map((p) => ({ plan: p, at: 0, failures: [] }));
  const rows: SeatRow[] = [];
  const seatMax = config.seatMaxOutputTokens;

  /** One seat's pass: its current engine, then backups on failure; a cut-off answer is retried once with twice the room. */
  const runSeat = async (s: SeatState, round: number, messages: ChatMessage[]): Promise<SeatRow | undefined> => {
    while (s.at < s.plan.chain.length) {
      const engine = s.plan.chain[s.at];
      const call = { orgId: input.orgId, engineId: engine.engineId, ownKey: engine.ownKey, messages };
      try {
        const first = await seat({ ...call, maxOutputTokens: seatMax });
        charge(first);
        let final = first;
        let cost = first.costMicros;
        if (first.finish === 'length') {
          final = await seat({ ...call, maxOutputTokens: seatMax * 2 });
          charge(final);
          cost += final.costMicros;
        }
        const fallback = engine.engineId !== s.plan.designed;
        const row: SeatRow = {
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
        rows.push(row);
        s.answer = row;
        return row;
      } catch (err) {
        if (isCancellation(err)) throw err;
        s.failures.push(`${engine.engineId}: ${failureReason(err)}`);
        s.at += 1;
      }
    }
    return undefined;
  };

  // The judge sees anonymous labels in an order drawn from a seed recorded in the outcome (and so in history).
  const judgeSeed = Math.floor(Math.random() * 2 ** 31);
  const random = seededRandom(judgeSeed);
  const staffUnavailable: Unavailable[] = [];
  let judgeCall: StaffCall | null = null;
  let judgeLatency = 0;
  let judgedBy: Outcome['bestSeatJudgedBy'] = lane === 'express' ? 'express_lane' : 'heuristic';

  const judgeRound = async (answered: SeatState[], allowEngine: boolean): Promise<{ judgment: Judgment; labelOf: Map<SeatRole, string> }> => {
    const order = shuffled(answered, random);
    const labelOf = new Map(order.map((s, i) => [s.plan.role, LABELS[i]] as const));
    const labelled: LabelledAnswer[] = order.map((s, i) => ({ label: LABELS[i], text: s.answer?.content ?? '' }));
    const labels = labelled.map((a) => a.label);
    const prompt = judgePrompt(input.messages, labelled);
    const promptTokens = input.promptTokens + answered.reduce((n, s) => n + (s.answer?.tokensOut ?? 0), 0) + PROMPT_TEMPLATE_TOKENS;
    for (const engine of allowEngine ? thePlan.judge.chain : []) {
      if (!affordable([{ engine, tokensIn: promptTokens, maxOut: 600 }])) break;
      try {
        const r = await judge({ orgId: input.orgId, engineId: engine.engineId, ownKey: false, messages: prompt, maxOutputTokens: 600, labels });
        charge(r);
        judgeLatency += r.latencyMs;
        const verdict = r.judgment;
        const fallback = engine.engineId !== thePlan.judge.designed;
        judgeCall = { modelUsed: r.engineId, latencyMs: judgeLatency, fallbackUsed: fallback, originalModel: fallback ? thePlan.judge.designed : null };
        if (verdict) {
          judgedBy = 'llm';
          return { judgment: verdict, labelOf };
        }
        staffUnavailable.push({ role: 'judge', reason: `${r.engineId} gave no usable verdict` });
      } catch (err) {
        if (isCancellation(err)) throw err;
        staffUnavailable.push({ role: 'judge', reason: `${engine.engineId}: ${failureReason(err)}` });
      }
    }
    judgedBy = 'heuristic';
    return { judgment: heuristicJudgment(labelled), labelOf };
  };

  // Round 1: every seat in parallel.
  const round1 = seatPrompt(input.messages, snippets);
  await Promise.all(seats.map((s) => runSeat(s, 1, round1)));
  let answered = seats.filter((s) => s.answer);
  let rounds = 1;

  const seatsUnavailable: Unavailable[] = seats.filter((s) => !s.answer).map((s) => ({ role: s.plan.role, reason: s.failures.join('; ') || 'no engine could run' }));
  if (answered.length === 0) {
    return abandon('mode_unavailable', `No seat could answer: ${seatsUnavailable.map((u) => `${u.role}: ${u.reason}`).join(' | ')}`);
  }

  const deliberation: RoundSummary[] = [];
  let judgment: Judgment | undefined;
  let labelOf = new Map<SeatRole, string>();
  let divergenceFirst: number | null = null;

  const recordRound = (round: number, j: Judgment | undefined): void => {
    const scoreOf = (role: SeatRole): number | null => (j ? (j.scores[labelOf.get(role) ?? ''] ?? null) : null);
    for (const row of rows.filter((r) => r.round === round)) row.judgeScore = scoreOf(row.role);
    deliberation.push({
      round,
      seats: rows.filter((r) => r.round === round).map((r) => ({ role: r.role, model: r.modelUsed, score: r.judgeScore })),
      divergence: j ? j.divergence : null,
      converged: j ? j.converged : null,
    });
  };

  if (lane === 'panel') {
    ({ judgment, labelOf } = await judgeRound(answered, true));
    divergenceFirst = judgment.divergence;
    recordRound(1, judgment);

    // Critique rounds, as the mode says: always, or only while the seats are split.
    while (rounds < config.rounds && answered.length > 1 && (config.critique === 'always' || (config.critique === 'when_split' && !judgment.converged))) {
      const current = answered;
      const next = rounds + 1;
      const critique = current.map((s) => {
        const others = current.filter((o) => o !== s).map((o) => ({ label: labelOf.get(o.plan.role) ?? '?', text: o.answer?.content ?? '' }));
        return critiquePrompt(input.messages, snippets, s.answer?.content ?? '', others);
      });
      // Each seat reads the question, the snippets and every current answer (its own and the others'), all counted.
      const critiqueIn = input.promptTokens + snippetTokens + current.reduce((n, s) => n + (s.answer?.tokensOut ?? 0), 0) + PROMPT_TEMPLATE_TOKENS;
      const estimate = current.map((s) => ({ engine: s.plan.chain[s.at], tokensIn: critiqueIn, maxOut: seatMax }));
      if (!affordable(estimate)) break;
      const revised = await Promise.all(current.map((s, i) => runSeat(s, next, critique[i])));
      const survivors = current.filter((_, i) => revised[i] !== undefined);
      // No seat could revise: the previous round's answers and judgment stand.
      if (survivors.length === 0) break;
      rounds = next;
      answered = survivors;
      ({ judgment, labelOf } = await judgeRound(answered, !capped));
      recordRound(next, judgment);
    }
  } else {
    recordRound(1, undefined);
  }

  // The best seat's latest answer (every seat still in `answered` has one).
  const bestState = judgment ? (answered.find((s) => labelOf.get(s.plan.role) === judgment?.best) ?? answered[0]) : answered[0];
  const bestRow = bestState.answer as SeatRow;
  for (const r of rows) r.isBest = r.role === bestRow.role;

  let answer = bestRow.content;
  let finish: 'stop' | 'length' = bestRow.finish;
  let synthesisCall: StaffCall | null = null;
  const converged = judgment ? judgment.converged : null;
  if (lane === 'panel' && judgment && !(converged && config.skipSynthesisWhenConverged) && !capped) {
    const labelled = answered.map((s) => ({ label: labelOf.get(s.plan.role) ?? '?', text: s.answer?.content ?? '' })).sort((a, b) => a.label.localeCompare(b.label));
    const prompt = synthesisPrompt(input.messages, labelled, judgment.best, judgment.why);
    const synthIn = input.promptTokens + answered.reduce((n, s) => n + (s.answer?.tokensOut ?? 0), 0) + PROMPT_TEMPLATE_TOKENS;
    let latency = 0;
    for (const engine of thePlan.synthesis.chain) {
      if (!affordable([{ engine, tokensIn: synthIn, maxOut: seatMax * 2 }])) break;
      try {
        const r = await synthesize({ orgId: input.orgId, engineId: engine.engineId, ownKey: false, messages: prompt, maxOutputTokens: seatMax * 2 });
        charge(r);
        latency += r.latencyMs;
        const fallback = engine.engineId !== thePlan.synthesis.designed;
        synthesisCall = { modelUsed: r.engineId, latencyMs: latency, fallbackUsed: fallback, originalModel: fallback ? thePlan.synthesis.designed : null };
        answer = r.text;
        finish = r.finish;
        break;
      } catch (err) {
        if (isCancellation(err)) throw err;
        staffUnavailable.push({ role: 'synthesis', reason: `${engine.engineId}: ${failureReason(err)}` });
      }
    }
  }

  const modeFee = projectedFee();
  // A test key bills nothing: every part of its bill is zero, so the billing identities still hold.
  const parts = live ? { gatewayMicros, platformFeeMicros: platformMicros, modeFeeMicros: modeFee } : { gatewayMicros: 0, platformFeeMicros: 0, modeFeeMicros: 0 };
  const billed = bill(input.form, { ...parts, ceilingMicros: input.ceilingMicros });
  const isCapped = input.form === 'A' ? capped || billed.capped : billed.capped;
  const substitutions: Substitution[] = seats
    .filter((s) => s.answer && s.answer.modelUsed !== s.plan.designed)
    .map((s) => ({
      role: s.plan.role,
      original: s.plan.designed,
      used: s.answer?.modelUsed ?? '',
      reason: s.failures.join('; ') || thePlan.notes.find((n) => n.startsWith(s.plan.designed)) || 'the designed engine is not available here',
    }));
  const completedMs = Date.now();

  const outcome: Outcome = {
    requestId: input.requestId,
    orgId: input.orgId,
    modeId: input.mode.id,
    ticker: input.mode.ticker,
    configHash: input.mode.configHash,
    tier: input.tier,
    status: isCapped ? 'capped' : 'succeeded',
    answer,
    // `length` outranks `cost_cap`; Form B has no `cost_cap`.
    finishReason: finish === 'length' ? 'length' : input.form === 'A' && isCapped ? 'cost_cap' : 'stop',
    classification,
    lane,
    rounds,
    seats: seats.length,
    seatsAnswered: seats.filter((s) => s.answer).length,
    converged,
    divergenceFirst,
    divergenceFinal: judgment ? judgment.divergence : null,
    contestedPassage: judgment?.contested
      ? { seat: ([...labelOf.entries()].find(([, l]) => l === judgment?.contested?.label)?.[0] ?? bestRow.role), quote: judgment.contested.quote, why: judgment.contested.why }
      : null,
    factualConflict: judgment?.factualConflict ?? false,
    bestSeat: { role: bestRow.role, modelUsed: bestRow.modelUsed, judgeScore: bestRow.judgeScore, content: bestRow.content },
    bestSeatRationale: judgment ? judgment.why.replace(/\banswer ([A-C])\b/gi, (m, l: string) => [...labelOf.entries()].find(([, x]) => x === l)?.[0] ?? m) : 'Express lane: one seat answered alone.',
    bestSeatJudgedBy: judgedBy,
    deliberation,
    engines: [...new Set(rows.map((r) => r.modelUsed))],
    substitutions,
    seatsUnavailable,
    staffUnavailable,
    staff: { judge: judgeCall, synthesis: synthesisCall, grounding },
    seatRows: rows,
    usage: { promptTokens: tokensIn, completionTokens: tokensOut, reasoningTokens },
    money: {
      ...parts,
      capCreditMicros: billed.capCreditMicros,
      billedMicros: billed.billedMicros,
      ceilingMicros: input.ceilingMicros,
    },
    payer: rows.some((r) => r.source === 'own_key') ? 'own_keys' : 'service',
    latencyMs: completedMs - startedMs,
    createdAt: input.createdAt,
    completedAt: new Date(completedMs).toISOString(),
  };

  // Settle retries through database outages; it fails for good only when the outcome cannot be written at all.
  try {
    await settle({ outcome, form: input.form, keyMode: input.keyMode, modeVersion: input.mode.version });
  } catch (err) {
    if (isCancellation(err)) throw err;
    return abandon('cost_unreadable', failureReason(err));
  }
  upsertSearchAttributes([{ key: QuorumStatus, value: outcome.status }]);
  upsertMemo({
    summary: `${lane} · ${rounds} round(s) · ${outcome.seatsAnswered}/${outcome.seats} seats · judged by ${judgedBy} · finish ${outcome.finishReason}`,
    billedMicros: outcome.money.billedMicros,
    judgeSeed,
    workflow: workflowInfo().workflowId,
  });
  return outcome;
}
