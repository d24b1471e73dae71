import { performance } from 'node:perf_hooks';
import type { KeyPrincipal } from './principal';
import type { Db } from '../db/knex';
import { admitEstimate } from '../db/repositories/limits';
import { ownProviderFamilies } from '../db/repositories/provider-credentials';
import { recordedCallStats } from '../db/repositories/mode-call-stats';
import { latestRunSummary } from '../db/repositories/runs';
import { runEvidence } from '../domain/run-summary';
import type { Classification } from '../domain/classifier';
import type { Form } from '../domain/form';
import { quote, tierRates, worstCaseGatewayMicros, type Quote, type QuoteInput, type TierRates } from '../domain/estimate';
import { callCeilingMicros, type Ceiling } from '../domain/fees';
import type { ChatMessage } from '../domain/messages';
import { classifyHeuristic } from '../domain/classifier';
import { classifierPrompt } from '../domain/prompts';
import { countMessagesTokens } from '../domain/tokens';
import { assertPlanPermits } from '../domain/plan-rules';
import type { ModeRecord, Tier } from '../domain/modes';
import type { TokenPrices } from '../domain/pricing';
import { asksClassifierModel, classifyPrompt } from '../engines/classify';
import type { EstimateInput } from './requests/common';
import type { Outcome } from '../domain/outcome';
import { checkInputTokens, concurrencySlots, holdingLease, keyCeilingMicros, resolveMode } from './checks';
import type { OperationDeps } from './deps';

export interface EstimateView {
  requestId: string;
  model: string;
  mode: ModeRecord;
  classification: Classification;
  tier: Outcome['tier'];
  rates: TierRates;
  /** Undefined when an engine of the mode has no catalog price. */
  quote: Quote | undefined;
  timing: { total: number; classify: number };
}

/** Each engine's prices as the engines have them: the catalog's, or the configured file's. */
export function catalogPrices(engines: OperationDeps['engines']): (engineId: string) => TokenPrices | undefined {
  return (engineId) => {
    const spec = engines.find(engineId);
    return spec && { inputUsdPerMtok: spec.inputUsdPerMtok, outputUsdPerMtok: spec.outputUsdPerMtok };
  };
}

/**
 * What the mode's classifier model reads of these messages; undefined when the mode names none (the heuristic costs
 * nothing). A deliberation's classify step asks it, so a call's quote prices its call (issue 38).
 */
export function classifierPromptTokens(mode: ModeRecord, messages: readonly ChatMessage[]): number | undefined {
  return mode.config.staff.classifier ? countMessagesTokens(classifierPrompt(messages)) : undefined;
}

/**
 * The mode version's fee rate per tier, from its configuration's recorded calls (one row per tier), with the share of
 * them that asked every seat of a first wave (`TierRate.wave`).
 */
export async function ratesOf(db: Db, mode: ModeRecord): Promise<TierRates> {
  return tierRates(mode.config, await recordedCallStats(db, mode));
}

/**
 * The ceiling of one call of `mode` by this caller: the key's or the mode's, lowered by `requested`; none (null) for a
 * connected app's call on a plan, which pays real cost with no per-call ceiling (spec 01 rule 11).
 */
export function callerCeilingMicros(form: Form, auth: KeyPrincipal, mode: ModeRecord, requested: number | undefined): Ceiling {
  return auth.app ? null : callCeilingMicros(form, mode.config, keyCeilingMicros(auth), requested);
}

/**
 * What a call on a plan holds while it runs: its engines' cost at its most, or the mode's own ceiling when an engine
 * has no catalog price. It admits the call under the allowance; the charge is the real cost.
 */
export function planHoldMicros(
  deps: Pick<OperationDeps, 'form' | 'engines'>,
  call: { mode: ModeRecord; tier: Tier; messages: readonly ChatMessage[]; promptTokens: number },
): number {
  const { mode, tier, promptTokens } = call;
  const shape = {
    config: mode.config,
    tier,
    classification: classifyHeuristic(call.messages),
    promptTokens,
    classifierPromptTokens: classifierPromptTokens(mode, call.messages),
  };
  return worstCaseGatewayMicros(shape, catalogPrices(deps.engines)) ?? callCeilingMicros(deps.form, mode.config, undefined, undefined);
}

/**
 * The provider families whose seat calls would run on this caller's own keys, as the call's plan decides
 * (activities' `prepare`): none for a test key (simulated engines) or a connected app (the service's keys).
 */
export async function ownKeyFamilies(db: Db, auth: KeyPrincipal): Promise<ReadonlySet<string>> {
  return runsOnOwnKeys(auth) ? ownProviderFamilies(db, auth.orgId) : new Set();
}

/** Whether this caller's seat calls may run on the organisation's own keys (not a test key's, nor a connected app's). */
function runsOnOwnKeys(auth: KeyPrincipal): boolean {
  return auth.keyKind !== 'test' && !auth.app;
}

/** What quoting one call of `mode` as this caller would make it takes (the key's ceiling applies; a plan's terms). */
export function callQuoteInput(
  deps: Pick<OperationDeps, 'form' | 'engines'>,
  auth: KeyPrincipal,
  call: {
    mode: ModeRecord;
    tier: Tier;
    classification: Classification;
    promptTokens: number;
    rates: TierRates;
    ownFamilies: ReadonlySet<string>;
    /** A completion's or an estimate's: the classifier model's call is priced (`classifierPromptTokens`). */
    classifierPromptTokens?: number;
  },
): QuoteInput {
  const { mode, tier, classification, promptTokens, rates, ownFamilies } = call;
  return {
    form: deps.form,
    config: mode.config,
    tier,
    classification,
    promptTokens,
    rate: rates[tier],
    // A first wave's other seats at the share of the tier's recorded calls that asked them (issue 52).
    waveStats: rates[tier].wave,
    // A seat runs on an own key when the organisation has one for its engine's family (domain/seat-assignment.ts).
    onOwnKey: (engineId) => ownFamilies.has(deps.engines.find(engineId)?.family ?? ''),
    classifierPromptTokens: call.classifierPromptTokens,
    keyCeilingMicros: keyCeilingMicros(auth),
    requestedCeilingMicros: undefined,
    realCostOnly: auth.app !== undefined,
  };
}

/** A mode's newest finished run changes a few times a day at most; the estimate's budget is milliseconds. */
const EVIDENCE_TTL_MS = 30_000;
const evidenceCache = new Map<string, { at: number; value: Promise<Awaited<ReturnType<typeof latestRunSummary>>> }>();

/**
 * The newest live, completed run of the mode version the caller would call (another organisation calls the listed
 * one), read at most once per version every 30 s per API process (so a new run shows within 30 s).
 */
export function runEvidenceOf(db: Db, mode: ModeRecord): ReturnType<typeof latestRunSummary> {
  const key = `${mode.id}@${mode.version}`;
  const now = Date.now();
  const cached = evidenceCache.get(key);
  if (cached && now - cached.at < EVIDENCE_TTL_MS) return cached.value;
  const value = latestRunSummary(db, mode.id, mode.version);
  evidenceCache.set(key, { at: now, value });
  // A failed read is not kept: the next estimate asks again.
  value.catch(() => evidenceCache.delete(key));
  return value;
}

/**
 * The free quote: the same classifier as a real call, in process (no workflow); it never reads or touches the
 * balance. Subject to the same rate and concurrency limits as a billed call (spec 01): refused when the organisation
 * has its limit in flight; one that waits on a classifier model holds a slot while it does, one the heuristic
 * classifies in process holds none (`admitEstimate`). After the mode, one round trip (two with a lease, which is
 * released before the answer). `startedAt` is the `performance.now()` of the round trip's start, for its own timing.
 */
export async function estimate(
  deps: OperationDeps,
  auth: KeyPrincipal,
  input: { requestId: string; body: EstimateInput; startedAt: number },
): Promise<EstimateView> {
  const { db, form } = deps;
  const { body, requestId } = input;
  const mode = await resolveMode(db, form, auth, body.model);
  const tier = body.tier ?? 'plus';
  // Free, but a connected app is refused what its plan would refuse the call (spec: after the mode is resolved).
  if (auth.app) assertPlanPermits(auth.app.plan, { mode, model: body.model, tier });
  const promptTokens = checkInputTokens(auth, body.messages);
  // Read-only and cached, so it may overlap the admission; its failure surfaces where it is awaited.
  const evidenceRead = runEvidenceOf(db, mode);
  evidenceRead.catch(() => undefined);
  const classifierEngine = mode.config.staff.classifier?.engine;
  const slots = concurrencySlots(auth);
  // The slot, the estimate's record, the recorded rates and the own keys' families in one round trip.
  const admission = await admitEstimate(db, {
    orgId: auth.orgId,
    requestId,
    limit: slots.limit,
    holdSlot: asksClassifierModel(deps.engines, classifierEngine),
    mode,
    ownKeys: runsOnOwnKeys(auth),
  });
  if (!admission.admitted) throw slots.refusal();
  const rates = tierRates(mode.config, admission.stats);
  const work = async (): Promise<EstimateView> => {
    const classifyStart = performance.now();
    const { classification: classified } = await classifyPrompt(deps.engines, deps.log, body.messages, classifierEngine);
    const classify = Math.round(performance.now() - classifyStart);
    const runs = await evidenceRead;
    // DESIGN §10: once the mode has finished runs, they decide whether a panel helps on questions like this one.
    const fromRuns = runs && runEvidence(runs.summary, classified.depth, runs.runId);
    const classification = fromRuns ? { ...classified, deliberationValue: fromRuns } : classified;
    const q = quote(
      callQuoteInput(deps, auth, {
        mode,
        tier,
        classification,
        promptTokens,
        rates,
        ownFamilies: admission.ownFamilies,
        classifierPromptTokens: classifierPromptTokens(mode, body.messages),
      }),
      catalogPrices(deps.engines),
    );
    const total = Math.round(performance.now() - input.startedAt);
    return { requestId, model: body.model, mode, classification, tier, rates, quote: q, timing: { total, classify } };
  };
  return admission.lease ? holdingLease(db, admission.lease, work) : work();
}
