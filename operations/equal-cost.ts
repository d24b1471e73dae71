import { callingKeyKind } from './checks';
import type { KeyPrincipal } from './principal';
import { recordedQuestionCosts } from '../db/repositories/runs';
import { classifyHeuristic } from '../domain/classifier';
import { equalCostSamples, RECORDED_MIN_QUESTIONS, type SamplePlan } from '../domain/equal-cost';
import { EXPECTED_OUTPUT_SHARE, projectedSeatsMicros, quote, type CallShape } from '../domain/estimate';
import { platformFeeMicros } from '../domain/fees';
import type { ModeRecord } from '../domain/modes';
import { engineCostMicros, type TokenPrices } from '../domain/pricing';
import { aggregationPrompt } from '../domain/prompts';
import type { Question } from '../domain/questions/types';
import type { RunLineup, TierLineup } from '../domain/run-lineup';
import { dealTiers, runQuestionPriceMicros, type RunSpec } from '../domain/runs';
import { countMessagesTokens } from '../domain/tokens';
import type { OperationDeps } from './deps';
import { catalogPrices } from './estimate';

/**
 * The equal-cost arms of a run (issue 39 item 2), chosen and priced at launch: per tier, how many samples of the
 * baseline's engine cost what the mode costs per question (every call of it, issue 52 item 2), and what each question's extra calls (the samples
 * after the baseline's own answer, and Self-MoA's aggregation) are priced at, as the run's questions are: 25% off
 * their engines' cost and platform fee. A dry run shows both; the launch bills them with the questions.
 */
export interface EqualCostQuote {
  plans: SamplePlan[];
  /** Each question's arms' price by id (zero on a test key, whose run bills nothing). */
  questionPrices: Record<string, number>;
}

/** A question's expected sample: its prompt in, half the seat allowance out, as the quote expects of a seat. */
function expectedOutput(mode: ModeRecord): number {
  return Math.round(mode.config.seatMaxOutputTokens * EXPECTED_OUTPUT_SHARE);
}

async function tierPlan(
  deps: OperationDeps,
  auth: KeyPrincipal,
  mode: ModeRecord,
  lineup: TierLineup,
  promptTokens: number,
): Promise<SamplePlan> {
  const { baseline } = lineup;
  const recorded = await recordedQuestionCosts(deps.db, {
    orgId: auth.orgId,
    modeId: mode.id,
    modeVersion: mode.version,
    keyMode: callingKeyKind(auth),
    tier: lineup.tier,
  });
  const base = { tier: lineup.tier, engineId: baseline.engineId };
  if (recorded.questions >= RECORDED_MIN_QUESTIONS) {
    const costs = { modeMicros: recorded.modeMicros, modeSeatsMicros: recorded.modeSeatsMicros, sampleMicros: recorded.baselineMicros };
    return { ...base, ...equalCostSamples(costs), basis: 'recorded', recordedQuestions: recorded.questions, ...costs };
  }
  const classification = { ...classifyHeuristic([{ role: 'user', content: '' }]), depth: 'medium' as const, lane: 'panel' as const };
  const shape: CallShape = { config: mode.config, tier: lineup.tier, classification, promptTokens };
  const prices = catalogPrices(deps.engines);
  const costs = {
    modeMicros: projectedModeMicros(shape, prices),
    modeSeatsMicros: projectedSeatsMicros(shape, prices) ?? 0,
    sampleMicros: engineCostMicros(promptTokens, expectedOutput(mode), baseline),
  };
  return { ...base, ...equalCostSamples(costs), basis: 'projected', recordedQuestions: 0, ...costs };
}

/**
 * What the mode's every call is projected to cost on a question, engines only: the quote's own arithmetic (its
 * seats, judge, ballot and synthesis at the expected sizes) at real engine cost, with no fee and no ceiling. No call
 * is on an own key here, so the quote's gateway cost is every call's; 0 when an engine has no catalog price.
 */
function projectedModeMicros(shape: CallShape, prices: Parameters<typeof quote>[1]): number {
  const noFee = { inputMicrosPerToken: 0, outputMicrosPerToken: 0, n: 0, basis: 'api_calls' as const };
  const q = quote(
    { ...shape, form: 'B', rate: noFee, keyCeilingMicros: undefined, requestedCeilingMicros: undefined, realCostOnly: true },
    prices,
  );
  return q?.gatewayMicros ?? 0;
}

/** One question's extra calls: k − 1 more samples and the aggregation over all k, each at its expected size. */
function questionArmsPrice(
  mode: ModeRecord,
  q: Question,
  promptTokens: number,
  plan: SamplePlan,
  lineup: TierLineup,
  synthesis: TokenPrices | undefined,
): number {
  const out = expectedOutput(mode);
  const asked = [{ role: 'user' as const, content: q.question }];
  const sample = engineCostMicros(promptTokens, out, lineup.baseline);
  const shown = Array.from({ length: plan.samples }, (_, i) => ({ label: String.fromCharCode(65 + i), text: '' }));
  const aggregation = synthesis
    ? engineCostMicros(countMessagesTokens(aggregationPrompt(asked, shown)) + plan.samples * out, out, synthesis)
    : 0;
  const samples = (plan.samples - 1) * sample;
  // Samples on the organisation's own provider account are its provider's to bill; the platform fee is ours.
  const source = lineup.baseline.ownKey ? 'own_key' : 'service';
  const billed =
    (source === 'service' ? samples : 0) + platformFeeMicros(samples, source) + aggregation + platformFeeMicros(aggregation, 'service');
  return runQuestionPriceMicros(billed);
}

/**
 * The arms' plans and prices for a run's questions, on the launch's lineup; none when its engines cannot be lined up
 * (the launch is then refused). `promptTokens`: each question's prompt by id, as the launch counted it.
 */
export async function equalCostQuote(
  deps: OperationDeps,
  auth: KeyPrincipal,
  mode: ModeRecord,
  run: { spec: RunSpec; lineup: RunLineup; questions: readonly Question[]; promptTokens: ReadonlyMap<string, number> },
): Promise<EqualCostQuote> {
  const { spec, lineup, questions, promptTokens } = run;
  if (!lineup.ok) return { plans: [], questionPrices: {} };
  const dealt = dealTiers(questions, spec.tiers);
  const plans: SamplePlan[] = [];
  const questionPrices: Record<string, number> = {};
  for (const tier of lineup.tiers) {
    const asked = dealt.filter((q) => q.tier === tier.tier);
    if (asked.length === 0) continue;
    const meanPrompt = Math.round(asked.reduce((n, q) => n + (promptTokens.get(q.id) ?? 0), 0) / asked.length);
    const plan = await tierPlan(deps, auth, mode, tier, meanPrompt);
    plans.push(plan);
    const synthesis = tier.plan.synthesis.chain[0] ?? catalogPrices(deps.engines)(mode.config.staff.synthesis.engine);
    for (const q of asked)
      questionPrices[q.id] = auth.keyKind === 'test' ? 0 : questionArmsPrice(mode, q, promptTokens.get(q.id) ?? 0, plan, tier, synthesis);
  }
  return { plans, questionPrices };
}
