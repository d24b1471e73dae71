import { CLASSIFIER_MAX_OUTPUT_TOKENS, type Classification, type Lane } from './classifier';
import type { Form } from './form';
import { bill, callCeilingMicros, modeFeeMicros, platformFeeMicros, type Ceiling } from './fees';
import { TIERS, type ModeConfig, type Tier } from './modes';
import type { CallSource } from './outcome';
import { engineCostMicros, type TokenPrices } from './pricing';
import { designedSeats, designedTunings, laneFor } from './seat-assignment';
import { countTokens } from './tokens';

/**
 * The free quote behind `/v1/estimate` (and the per-tier rates of `/v1/models`): pure arithmetic over the
 * classification, the mode's configuration, the engines' catalog prices and the mode's recorded calls.
 * Money is integer micro-dollars; a rate in USD per 1M tokens is micro-dollars per token.
 */

/** Recorded calls a mode and tier need before their observed rate replaces the configured one. */
export const MIN_SAMPLE = 20;
/** A seat is assumed to write half its output allowance: the quote's one guess about an answer not yet written. */
export const EXPECTED_OUTPUT_SHARE = 0.5;
/** A judgment is a short structured verdict. */
export const JUDGE_OUTPUT_TOKENS = 256;

/** Totals (or means: only their ratio is used) over a mode's recorded calls on one tier. */
export interface CallStats {
  n: number;
  inputTokens: number;
  outputTokens: number;
  modeFeeMicros: number;
  /** Of those calls, the ones whose receipt records round 1's seats asked, and how many of them asked every seat. */
  wave?: WaveStats;
}

/** The mode's fee as a rate per token processed (output at 4× input), per tier. */
export interface TierRate {
  inputMicrosPerToken: number;
  outputMicrosPerToken: number;
  n: number;
  basis: 'api_calls';
  /** Set when too few calls were recorded and the configured rate stands in. */
  reason?: 'below_min_sample';
  /**
   * The tier's recorded calls as a first wave reads them (issue 52), read with the rate: a quote of a mode with
   * `aggregation.firstWave` prices its other seats from them (`QuoteInput.waveStats`). Absent: none read.
   */
  wave?: WaveStats;
}

export function tierRate(config: ModeConfig, stats: CallStats): TierRate {
  const weighted = stats.inputTokens + 4 * stats.outputTokens;
  const wave = stats.wave && { wave: stats.wave };
  if (stats.n >= MIN_SAMPLE && weighted > 0) {
    const input = stats.modeFeeMicros / weighted;
    return { inputMicrosPerToken: input, outputMicrosPerToken: input * 4, n: stats.n, basis: 'api_calls', ...wave };
  }
  const input = config.fees.perMtokInputUsd;
  return {
    inputMicrosPerToken: input,
    outputMicrosPerToken: input * 4,
    n: stats.n,
    basis: 'api_calls',
    reason: 'below_min_sample',
    ...wave,
  };
}

export type TierRates = Record<Tier, TierRate>;

export function tierRates(config: ModeConfig, statsByTier: Record<Tier, CallStats>): TierRates {
  return Object.fromEntries(TIERS.map((t) => [t, tierRate(config, statsByTier[t])])) as TierRates;
}

/**
 * A mode's first wave (issue 52: `aggregation.firstWave`): round 1 asks that many seats, the rest only when they
 * disagree or one is unreadable, and a seat never asked is not billed. The recorded calls of such a mode: how many, and
 * how many asked every seat of their row (no early stop). Counted per configuration and tier with the fee rate's calls
 * (live, billed API-key calls: db/repositories/mode-call-stats.ts), from each receipt's `aggregation`.
 */
export interface WaveStats {
  n: number;
  allAsked: number;
}

/** How a first wave is priced: its seats always, the rest times the share of calls expected to ask them. */
export interface FirstWavePricing {
  firstWave: number;
  seats: number;
  /** Observed (`allAsked / n`) once MIN_SAMPLE calls are recorded; until then 1, the whole panel (never below its cost). */
  restAskedShare: number;
  basis: 'observed' | 'all_seats_assumed';
  n: number;
}

/** The first wave's pricing on a panel of `seats`; null when the mode asks every seat at once (or the wave is the row). */
export function firstWavePricing(config: ModeConfig, seats: number, stats: WaveStats | undefined): FirstWavePricing | null {
  const firstWave = config.aggregation?.firstWave;
  if (firstWave === undefined || seats <= firstWave) return null;
  const n = stats?.n ?? 0;
  if (stats && n >= MIN_SAMPLE)
    return { firstWave, seats, restAskedShare: Math.min(1, Math.max(0, stats.allAsked / n)), basis: 'observed', n };
  return { firstWave, seats, restAskedShare: 1, basis: 'all_seats_assumed', n };
}

/** Seat passes the mode is expected to run for a prompt of this depth. */
function expectedRounds(config: ModeConfig, classification: Classification, express: boolean): number {
  if (express || config.critique === 'never') return 1;
  return config.critique === 'always' || classification.depth === 'deep' ? config.rounds : 1;
}

export interface QuoteInput {
  form: Form;
  config: ModeConfig;
  tier: Tier;
  classification: Classification;
  promptTokens: number;
  rate: TierRate;
  /**
   * Whether a seat on this engine runs on the organisation's own provider key (its provider bills the call; we
   * charge 0.5% of it). Absent: every call on the service's keys. Staff calls always are.
   */
  onOwnKey?: (engineId: string) => boolean;
  /**
   * What the mode's classifier model reads of this prompt, when the call will ask one (a live call whose mode names
   * one): its call is priced as any engine call. Undefined: no classifier call (the heuristic, or a run's question).
   */
  classifierPromptTokens?: number;
  keyCeilingMicros: number | undefined;
  requestedCeilingMicros: number | undefined;
  /** A connected app's call on a plan: real engine cost only, no fees and no ceiling (spec 01 rule 11). */
  realCostOnly?: boolean;
  /** A first-wave mode's recorded calls on this tier; absent: none known, every seat priced (firstWavePricing). */
  waveStats?: WaveStats;
}

export interface Quote {
  express: boolean;
  rounds: number;
  gatewayMicros: number;
  platformFeeMicros: number;
  modeFeeMicros: number;
  grossMicros: number;
  capCreditMicros: number;
  /** What the caller would pay: the gross after the ceiling. */
  totalMicros: number;
  capped: boolean;
  ceilingMicros: Ceiling;
  /** How a first wave was priced; null when the mode has none or the call is quoted on the express lane. */
  firstWave: FirstWavePricing | null;
}

interface Call {
  prices: TokenPrices;
  tokensIn: number;
  tokensOut: number;
  source: CallSource;
  /** A seat's pass (not the classifier, judge or synthesis). */
  seat: boolean;
  /** The share of calls expected to make it: 1, or a first wave's `restAskedShare` for a seat past the wave. */
  weight: number;
}

/** What the projected calls depend on. */
export type CallShape = Pick<
  QuoteInput,
  'config' | 'tier' | 'classification' | 'promptTokens' | 'onOwnKey' | 'classifierPromptTokens' | 'waveStats'
>;

/** How a deliberation is projected: as expected (the quote), or at its most (a plan's hold). */
interface Projection {
  outputShare: number;
  /** Every round the mode may run, on the panel unless the tier or mode is express-only. */
  atMost: boolean;
}

const EXPECTED: Projection = { outputShare: EXPECTED_OUTPUT_SHARE, atMost: false };

/** The calls a deliberation is projected to make; undefined when an engine has no catalog price. */
function expectedCalls(
  input: CallShape,
  findPrices: (engineId: string) => TokenPrices | undefined,
  projection: Projection = EXPECTED,
): { calls: Call[]; lane: Lane; rounds: number; firstWave: FirstWavePricing | null } | undefined {
  const lane = laneFor(input.config, input.tier, projection.atMost ? { lane: 'panel' } : input.classification);
  const express = lane === 'express';
  const seats = designedSeats(input.config, input.tier, lane);
  const rounds =
    projection.atMost && !express && input.config.critique !== 'never'
      ? input.config.rounds
      : expectedRounds(input.config, input.classification, express);
  // At its most (a plan's hold) every seat is asked; as expected, a first wave's other seats only as often as asked.
  const firstWave = projection.atMost || express ? null : firstWavePricing(input.config, seats.length, input.waveStats);
  const pastWave = (i: number): boolean => firstWave !== null && i >= firstWave.firstWave;
  const weight = (i: number): number => (firstWave && pastWave(i) ? firstWave.restAskedShare : 1);
  // The answers a judge, a synthesis or a critique reads: every seat's, those past a first wave as often as asked.
  const answers = seats.reduce((sum, _, i) => sum + weight(i), 0);
  const out = Math.round(input.config.seatMaxOutputTokens * projection.outputShare);
  const seen = (n: number): number => input.promptTokens + Math.round(n * out);
  const seatSource = (engine: string): CallSource => (input.onOwnKey?.(engine) ? 'own_key' : 'service');
  // A tuned seat reads its own system prompt on every pass.
  const ownPrompt = designedTunings(input.config, input.tier, lane).map((t) => (t?.systemPrompt ? countTokens(t.systemPrompt) : 0));
  const plan: { engine: string; tokensIn: number; tokensOut: number; source: CallSource; seat?: boolean; weight?: number }[] = [];
  const classifier = input.config.staff.classifier;
  if (classifier && input.classifierPromptTokens !== undefined)
    plan.push({
      engine: classifier.engine,
      tokensIn: input.classifierPromptTokens,
      tokensOut: Math.round(CLASSIFIER_MAX_OUTPUT_TOKENS * projection.outputShare),
      source: 'service',
    });
  for (let round = 1; round <= rounds; round++) {
    // From the second round each seat also reads the others' answers (a seat past the wave, asked, reads them all).
    for (const [i, engine] of seats.entries())
      plan.push({
        engine,
        tokensIn: seen(round === 1 ? 0 : pastWave(i) ? seats.length - 1 : answers - 1) + ownPrompt[i],
        tokensOut: out,
        source: seatSource(engine),
        seat: true,
        weight: weight(i),
      });
    if (!express)
      plan.push({
        engine: input.config.staff.judge.engine,
        tokensIn: seen(answers),
        tokensOut: JUDGE_OUTPUT_TOKENS,
        source: 'service',
      });
  }
  if (!express) plan.push({ engine: input.config.staff.synthesis.engine, tokensIn: seen(answers), tokensOut: out, source: 'service' });
  const calls: Call[] = [];
  for (const p of plan) {
    const prices = findPrices(p.engine);
    if (!prices) return undefined;
    calls.push({ prices, tokensIn: p.tokensIn, tokensOut: p.tokensOut, source: p.source, seat: p.seat === true, weight: p.weight ?? 1 });
  }
  return { calls, lane, rounds, firstWave };
}

/** A call's cost as projected: its engine's, times the share of calls expected to make it (rounded up to a micro-dollar). */
function callCostMicros(c: Call): number {
  const cost = engineCostMicros(c.tokensIn, c.tokensOut, c.prices);
  return c.weight === 1 ? cost : Math.ceil(cost * c.weight);
}

function costBySource(calls: readonly Call[]): Record<CallSource, number> {
  const cost: Record<CallSource, number> = { service: 0, own_key: 0 };
  for (const c of calls) cost[c.source] += callCostMicros(c);
  return cost;
}

/** The platform fee as the meter charges it: once per source, on that source's summed cost. */
function sourcesFeeMicros(cost: Record<CallSource, number>): number {
  return platformFeeMicros(cost.service, 'service') + platformFeeMicros(cost.own_key, 'own_key');
}

export function quote(input: QuoteInput, findPrices: (engineId: string) => TokenPrices | undefined): Quote | undefined {
  const expected = expectedCalls(input, findPrices);
  if (!expected) return undefined;
  const { calls, lane } = expected;
  const cost = costBySource(calls);
  // Priced as the call bills (domain/cost-meter.ts): own-key seats are the provider's to bill, their fee ours.
  const gatewayMicros = cost.service;
  const tokensIn = Math.round(calls.reduce((sum, c) => sum + c.tokensIn * c.weight, 0));
  const tokensOut = Math.round(calls.reduce((sum, c) => sum + c.tokensOut * c.weight, 0));
  const modeFee = input.realCostOnly
    ? 0
    : input.form === 'A'
      ? modeFeeMicros('A', input.config.fees, { depth: input.classification.depth, lane, tokensIn, tokensOut })
      : engineCostMicros(tokensIn, tokensOut, {
          inputUsdPerMtok: input.rate.inputMicrosPerToken,
          outputUsdPerMtok: input.rate.outputMicrosPerToken,
        });
  const platformFee = input.realCostOnly ? 0 : sourcesFeeMicros(cost);
  const ceilingMicros = input.realCostOnly
    ? null
    : callCeilingMicros(input.form, input.config, input.keyCeilingMicros, input.requestedCeilingMicros);
  const billed = bill(input.form, { gatewayMicros, platformFeeMicros: platformFee, modeFeeMicros: modeFee, ceilingMicros });
  return {
    express: lane === 'express',
    rounds: expected.rounds,
    gatewayMicros,
    platformFeeMicros: platformFee,
    modeFeeMicros: modeFee,
    grossMicros: gatewayMicros + platformFee + modeFee,
    capCreditMicros: billed.capCreditMicros,
    totalMicros: billed.billedMicros,
    capped: billed.capped,
    ceilingMicros,
    firstWave: expected.firstWave,
  };
}

/**
 * The engines' cost of a call as the quote projects it at its most: every seat and staff call writing a seat's whole
 * output allowance, over every round the mode may run, on the panel unless the tier or mode is express-only. What a
 * plan holds for a call, which has no ceiling to hold (spec 01 rule 11): a bound for admitting it, not a cap; the
 * charge is the real cost (a retried cut-off seat or a longer synthesis may pass it).
 */
export function worstCaseGatewayMicros(input: CallShape, findPrices: (engineId: string) => TokenPrices | undefined): number | undefined {
  const projected = expectedCalls(input, findPrices, { outputShare: 1, atMost: true });
  return projected?.calls.reduce((sum, c) => sum + engineCostMicros(c.tokensIn, c.tokensOut, c.prices), 0);
}

/**
 * What the seats of a panel call are projected to cost, their engines' cost only (issue 39 item 2: the equal-cost
 * arms' k where the mode has too few recorded questions); undefined when an engine has no catalog price.
 */
export function projectedSeatsMicros(input: CallShape, findPrices: (engineId: string) => TokenPrices | undefined): number | undefined {
  const projected = expectedCalls(input, findPrices);
  return projected?.calls.filter((c) => c.seat).reduce((sum, c) => sum + callCostMicros(c), 0);
}
