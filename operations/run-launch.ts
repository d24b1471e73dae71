import { callingKeyKind } from './checks';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import { randomInt, randomUUID } from 'node:crypto';
import type { KeyPrincipal } from './principal';
import { findMode, isListed } from '../db/repositories/modes';
import { insertQuote, payerOf, returnDryRunQuote, takeDryRunQuote, type QuoteRecord } from '../db/repositories/quotes';
import {
  failLaunch,
  findRun,
  findRunByKey,
  markRunQueued,
  questionResults,
  questionsForRun,
  recentDerivedRun,
  type NewRun,
  type RunRecord,
} from '../db/repositories/runs';
import { keyAllowsMode } from '../domain/api-keys';
import { isBillingRefusal } from '../domain/billing';
import { canonicalHash } from '../domain/canonical-json';
import { classifyHeuristic } from '../domain/classifier';
import { QuorumError, type ErrorCode } from '../domain/errors';
import type { Form } from '../domain/form';
import { quote } from '../domain/estimate';
import type { SamplePlan } from '../domain/equal-cost';
import type { ModeRecord } from '../domain/modes';
import { REAL_MIX } from '../domain/questions/benchmark-sets';
import type { Question } from '../domain/questions/types';
import { lineUpRun, type RunLineup } from '../domain/run-lineup';
import {
  BUCKET_DEPTH,
  CERTIFICATION,
  certificationSpec,
  ENDED_STATES,
  dealTiers,
  estimatedRunMinutes,
  runQuestionPriceMicros,
  sumPrices,
  totalQuestions,
  type BucketCounts,
  type QuestionResult,
  type RunKind,
  type RunSpec,
} from '../domain/runs';
import { countMessagesTokens } from '../domain/tokens';
import { workflowIds } from '../domain/workflow-ids';
import { assertPublicCallbackHost, CallbackAddressRefused } from '../infra/callback-address';
import { benchmarkLibrary } from '../infra/benchmark-sets';
import { faultPoint } from '../infra/faults';
import { awaitAdmission, startRun } from '../starters/runs';
import { runSeatingContext } from '../engines/seating-context';
import type { RunRequest } from './requests/runs';
import type { OperationDeps } from './deps';
import { equalCostQuote, type EqualCostQuote } from './equal-cost';
import { callQuoteInput, catalogPrices, classifierPromptTokens, ownKeyFamilies, ratesOf } from './estimate';
import { assertPlanAffordsRun, assertPlanPermitsRun, planCertificationMicros, planPayerOf } from './plan-runs';

import { DEFAULT_CALLBACK_RETRY_MS, DEFAULT_QUOTE_TTL_S, LAUNCH_RETRY_AFTER_S } from './run-settings';

/**
 * Launching test and certification runs (spec 02): mode (404 / 403 `mode_not_owned`) →
 * questions and price (400) → engines (409 `provider_unavailable`) → listing (Form B certification) → dry run →
 * idempotency (replay / 422 / 409 `reconciliation_required`) → the run and its charge in one transaction (daily
 * limit 429, balance 402) → the workflow (a start that fails credits everything back).
 */

export interface LaunchView {
  kind: RunKind;
  dryRun: boolean;
  mode: ModeRecord;
  model: string;
  run: RunRecord | null;
  counts: BucketCounts;
  totalQuestions: number;
  priceMicros: number;
  estimatedMinutes: number;
  requiresListing: boolean;
  /** The idempotency key had already launched this run: nothing new was started or charged. */
  replayed: boolean;
  /** A test run's dry run: the quote its launch honours (the seed stays server-side: it would reveal the questions). */
  quote: { id: string; expiresAt: Date } | null;
  note: string;
  /**
   * The equal-cost arms it runs (issue 39 item 2): k per tier and how it was chosen, and what they add to the price
   * (inside a certification's flat $50; zero on a test key); null when turned off. Absent on a replayed launch's view.
   */
  equalCost?: { plans: SamplePlan[]; priceMicros: number } | null;
}

/** How a launch is keyed and bounded; an advisor quote's approval sets them all, a REST launch only the key. */
export interface LaunchOptions {
  idempotencyKey?: string;
  /** The questions' seed (a quote's, so the launch draws exactly the questions it priced); fresh when absent. */
  seed?: number;
  runId?: string;
  workflowId?: string;
  /** Refused with 409 `requoted`, before any charge, when the run would now cost more than this. */
  maxPriceMicros?: number;
}

/** Where a run is polled, below the address the caller reached. */
export function statusPath(kind: RunKind, id: string): string {
  return `/v1/${kind === 'test' ? 'tests' : 'certify'}?batch_id=${id}`;
}

/**
 * Spec 02: on the launch endpoints `insufficient_balance` also covers a billing state (a used quota, missing billing,
 * an activation allowance used); the message names which.
 */
function asInsufficientBalance(err: QuorumError): QuorumError {
  if (!isBillingRefusal(err.code)) return err;
  return new QuorumError('insufficient_balance', `${err.code}: ${err.message}`, { param: err.param, requestId: err.requestId });
}

/** Form A answers what Form B calls 402 and 409 with `launch_refused` (its launch lists neither status). */
function refusal(form: 'A' | 'B', err: QuorumError): QuorumError {
  if (form === 'B') return err;
  return new QuorumError('launch_refused', err.message, { param: err.param, requestId: err.requestId });
}

async function resolveOwnMode(deps: OperationDeps, auth: KeyPrincipal, model: string): Promise<ModeRecord> {
  const mode = await findMode(deps.db, { orgId: auth.orgId, form: deps.form, model });
  if (!mode)
    throw new QuorumError('model_not_found', `No mode \`${JSON.stringify(model).slice(1, -1)}\` is available to this organisation.`, {
      param: 'model',
    });
  if (mode.orgId !== auth.orgId)
    throw new QuorumError('mode_not_owned', `Runs need a mode your organisation owns; \`${model}\` is not one of them.`, {
      param: 'model',
    });
  if (!keyAllowsMode(auth.allowedModes, mode.id) && !keyAllowsMode(auth.allowedModes, mode.ticker))
    throw new QuorumError('insufficient_scope', `This key is limited to other modes than \`${model}\`.`, { param: 'model' });
  return mode;
}

/**
 * A paired re-run's questions (issue 28 item 4): those of the organisation's earlier run, fixed by its spec (counts,
 * set, seed), once it has ended; imported sets are never changed, so the seed draws them again.
 */
async function pairedSpec(
  deps: OperationDeps,
  auth: KeyPrincipal,
  batchId: string,
): Promise<Pick<RunSpec, 'counts' | 'questionSetId' | 'seed'>> {
  const earlier = await findRun(deps.db, auth.orgId, batchId);
  if (!earlier)
    throw new QuorumError(deps.form === 'B' ? 'batch_not_found' : 'not_found', `No run \`${batchId.slice(0, 64)}\` in this organisation.`, {
      param: 'svc.same_questions_as',
    });
  // Its questions are sealed until it ends (issue 38 item 1): a paired run ended early would show them.
  if (!ENDED_STATES.includes(earlier.state))
    throw new QuorumError(
      'invalid_request',
      `Run \`${batchId}\` has not ended; pair with it once it has (its questions are sealed until then).`,
      {
        param: 'svc.same_questions_as',
      },
    );
  const { counts, questionSetId, seed } = earlier.spec;
  // A release whose generator draws another question from the same seed would pair different questions by id.
  const [drawn, asked] = await Promise.all([questionsForRun(deps.db, auth.orgId, earlier.spec), questionResults(deps.db, earlier.id)]);
  const now = new Map('questions' in drawn ? drawn.questions.map((q) => [q.id, q]) : []);
  const same = (r: QuestionResult): boolean => {
    const q = now.get(r.questionId);
    return q !== undefined && q.answer === r.reference && q.cluster === r.cluster && (r.question ?? q.question) === q.question;
  };
  if (!('questions' in drawn) || !asked.every(same))
    throw new QuorumError(
      'invalid_request',
      `The questions of run \`${batchId}\` can no longer be drawn as it drew them (an earlier release generated them); name a newer run.`,
      { param: 'svc.same_questions_as' },
    );
  return { counts, questionSetId, seed };
}

async function runQuestions(deps: OperationDeps, auth: KeyPrincipal, spec: RunSpec): Promise<Question[]> {
  const found = await questionsForRun(deps.db, auth.orgId, spec);
  if ('questions' in found) return found.questions;
  const message = {
    set: `No question set \`${spec.questionSetId}\` in this organisation.`,
    installed: `The benchmark sets are not installed on this deployment, so \`${spec.questionSetId}\` cannot be drawn; use the generated questions (no \`svc.question_set\`) or an imported set.`,
    questions: `Question set \`${spec.questionSetId}\` has fewer questions of some difficulty than the run asks for.`,
  }[found.missing];
  throw new QuorumError('invalid_request', message, { param: 'svc.question_set' });
}

/**
 * Each question's price: 25% off what its live call would bill (after the call's ceiling), at its bucket's depth and
 * its tier, from its real prompt; zero on a test key, whose run bills nothing.
 */
async function testRunPrices(
  deps: OperationDeps,
  auth: KeyPrincipal,
  mode: ModeRecord,
  run: { spec: RunSpec; questions: Question[]; promptTokens: ReadonlyMap<string, number>; ownFamilies: ReadonlySet<string> },
): Promise<Record<string, number>> {
  const { spec, questions, promptTokens, ownFamilies } = run;
  const rates = await ratesOf(deps.db, mode);
  const base = classifyHeuristic([{ role: 'user', content: '' }]);
  const prices: Record<string, number> = {};
  for (const q of dealTiers(questions, spec.tiers)) {
    const classification = { ...base, depth: BUCKET_DEPTH[q.bucket], lane: 'panel' as const };
    const messages = [{ role: 'user' as const, content: q.question }];
    // What the live call would bill, its classifier model's call included (issue 38 item 9).
    const asked = {
      mode,
      tier: q.tier,
      classification,
      promptTokens: promptTokens.get(q.id) ?? countMessagesTokens(messages),
      rates,
      ownFamilies,
      classifierPromptTokens: classifierPromptTokens(mode, messages),
    };
    const priced = quote(callQuoteInput(deps, auth, asked), catalogPrices(deps.engines));
    if (!priced)
      throw new QuorumError('price_unavailable', `The mode has no API price for ${q.bucket} questions at the ${q.tier} tier.`, {
        param: 'model',
      });
    prices[q.id] = auth.keyKind === 'test' ? 0 : runQuestionPriceMicros(priced.totalMicros);
  }
  return prices;
}

function assertEnginesRun(deps: OperationDeps, lineup: RunLineup): void {
  if (!lineup.ok)
    throw refusal(
      deps.form,
      new QuorumError(
        'provider_unavailable',
        `The run needs engines that cannot run here: ${lineup.missing.join('; ')}. Nothing was charged.`,
      ),
    );
}

async function workflowExists(deps: OperationDeps, workflowId: string): Promise<boolean> {
  try {
    await deps.client.workflow.getHandle(workflowId).describe();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

/** A key's earlier launch: the same body gets the same run; another body is 422; a launch cut off mid-way is reconciled. */
async function replayLaunch(deps: OperationDeps, existing: RunRecord, fingerprint: string): Promise<RunRecord> {
  if (existing.fingerprint !== fingerprint)
    throw new QuorumError('idempotency_key_reused', 'This Idempotency-Key was used with a different request body.', {
      param: 'Idempotency-Key',
    });
  if (existing.state === 'failed' && (existing.errorCode === 'reconciliation_required' || existing.errorCode === 'launch_failed'))
    throw new QuorumError(
      'reconciliation_required',
      'An earlier attempt with this key stopped mid-charge and was credited back; retry with a new key.',
    );
  if (existing.state !== 'launching') return existing;
  if (await workflowExists(deps, existing.workflowId)) {
    await markRunQueued(deps.db, existing.id);
    return { ...existing, state: 'queued' };
  }
  await failLaunch(deps.db, existing.id, 'reconciliation_required', 'The launch stopped between its charge and its start.');
  throw new QuorumError(
    'reconciliation_required',
    'An earlier attempt with this key stopped mid-charge; it was credited back. Retry with a new key.',
  );
}

/** Each question's price with its equal-cost arms' added (issue 39 item 2). */
function withArmPrices(prices: Record<string, number>, arms: EqualCostQuote | null): Record<string, number> {
  if (!arms) return prices;
  return Object.fromEntries(Object.entries(prices).map(([id, price]) => [id, price + (arms.questionPrices[id] ?? 0)]));
}

/** What a launch's idempotency key is bound to: the run asked for, whether or not it was a dry run first. */
export function launchFingerprint(kind: RunKind, request: RunRequest): string {
  return canonicalHash({ kind, request: { ...request, dryRun: false } });
}

/** What a test run request asks of its run, its questions drawn from `seed`. */
export function testRunSpec(request: RunRequest, seed: number): RunSpec {
  const { counts, judges, repeats, protocol, punchUp, tiers, questionSetId } = request;
  return { counts, judges, repeats, protocol, punchUp, tiers, questionSetId, seed };
}

/**
 * A launch sent twice, by a client's retry, an agent after a timeout or two clicks, is one run: without a key of its
 * own (Form A has no header; Form B and MCP may omit it) its key is derived from the organisation, the API key, the
 * kind, the request (dry or not), the mode version it would run and the UTC day, as a completion's is (DESIGN §4).
 * A run launched so in the last 24 hours keeps its key across midnight (`launchKey`); after a release it is a new run.
 */
export function derivedLaunchKey(auth: KeyPrincipal, kind: RunKind, fingerprint: string, modeVersion: number, day: string): string {
  return `derived-${canonicalHash({ orgId: auth.orgId, apiKeyId: auth.keyId, kind, fingerprint, modeVersion, day })}`;
}

/**
 * A fresh seed for a launch's questions (issue 38 item 1): random, so no two launches can be steered onto the same
 * questions; a dry run's quote keeps its seed server-side for the launch that honours it (item 8).
 */
function freshSeed(): number {
  return randomInt(0, 2 ** 32);
}

/**
 * The key of a launch sent without one: the derived key of the same body's run by this API key in the last 24 hours,
 * if any, so a retry across UTC midnight is still that run (issue 38 item 11); else today's derived key.
 */
async function launchKey(deps: OperationDeps, auth: KeyPrincipal, kind: RunKind, priced: PricedLaunch): Promise<string> {
  const { fingerprint, mode, day } = priced;
  const recent = await recentDerivedRun(deps.db, { orgId: auth.orgId, apiKeyId: auth.keyId, kind, fingerprint, modeVersion: mode.version });
  return recent?.idempotencyKey ?? derivedLaunchKey(auth, kind, fingerprint, mode.version, day);
}

/** Issue 28 item 6: in production a callback may not point inside the deployment (SSRF); each delivery checks again. */
async function assertCallbackAllowed(deps: OperationDeps, url: string): Promise<void> {
  try {
    await assertPublicCallbackHost(new URL(url), deps.runs.publicCallbacksOnly === true);
  } catch (err) {
    if (!(err instanceof CallbackAddressRefused)) throw err;
    throw new QuorumError(
      'callback_url_refused',
      `\`svc.callback_url\` must reach a public address: ${err.reason}. Loopback, private, link-local and metadata ranges are refused.`,
      { param: 'svc.callback_url' },
    );
  }
}

/** What a launch runs and costs, known before anything is started or charged: all a dry run answers. */
interface PricedLaunch {
  mode: ModeRecord;
  fingerprint: string;
  /** The UTC day: with the request it fixes a derived idempotency key. */
  day: string;
  spec: RunSpec;
  /** What the run charges: nothing on a test key. */
  billed: number;
  /** Certification on Form B needs the mode listed in the marketplace; everything else counts as listed. */
  listed: boolean;
  view: LaunchView;
}

/** The mode (404 / 403), its questions and price (400, 409 `requoted`), its engines (409 `provider_unavailable`), its listing. */
async function priceLaunch(
  deps: OperationDeps,
  auth: KeyPrincipal,
  kind: RunKind,
  request: RunRequest,
  opts: LaunchOptions,
): Promise<PricedLaunch> {
  if (request.callbackUrl !== undefined) await assertCallbackAllowed(deps, request.callbackUrl);
  const mode = await resolveOwnMode(deps, auth, request.model);
  const fingerprint = launchFingerprint(kind, request);
  const day = new Date().toISOString().slice(0, 10);
  const paired = request.sameQuestionsAs === undefined ? null : await pairedSpec(deps, auth, request.sameQuestionsAs);
  const seed = paired?.seed ?? opts.seed ?? freshSeed();
  const drawn: RunSpec =
    kind === 'certification'
      ? certificationSpec(seed, benchmarkLibrary() ? REAL_MIX : null)
      : { ...testRunSpec(request, seed), ...(paired && { ...paired, sameQuestionsAs: request.sameQuestionsAs }) };
  assertPlanPermitsRun(auth, mode, request.model, drawn);
  const questions = await runQuestions(deps, auth, drawn);
  // A connected app's run seats the service's keys, as its calls do: never the organisation's own provider account.
  const ownFamilies = await ownKeyFamilies(deps.db, auth);
  const lineup = lineUpRun(mode.config, drawn, runSeatingContext(deps.engines, ownFamilies, auth.keyKind === 'test'));
  const promptTokens = new Map(questions.map((q) => [q.id, countMessagesTokens([{ role: 'user', content: q.question }])]));
  const priced = { spec: drawn, questions, promptTokens };
  // The equal-cost arms (issue 39 item 2): a certification always runs them, a test run unless told not to.
  const arms = request.equalCostArms === false ? null : await equalCostQuote(deps, auth, mode, { ...priced, lineup });
  const questionPrices =
    kind === 'test' || auth.app ? withArmPrices(await testRunPrices(deps, auth, mode, { ...priced, ownFamilies }), arms) : undefined;
  const spec: RunSpec = {
    ...(kind === 'certification' ? drawn : { ...drawn, questionPrices }),
    ...(arms && { samplePlans: arms.plans }),
  };
  // A plan pays a certification's real cost, never more than the $50 an API key pays (docs/plans.md).
  const certificationPrice = auth.app ? planCertificationMicros(sumPrices({ questionPrices })) : CERTIFICATION.priceMicros;
  // A test key's run is simulated and bills nothing, as its completions do.
  const billed = auth.keyKind === 'test' ? 0 : kind === 'certification' ? certificationPrice : sumPrices(spec);
  if (opts.maxPriceMicros !== undefined && !request.dryRun && billed > opts.maxPriceMicros)
    throw new QuorumError('requoted', 'The run now costs more than the approved price; nothing was launched or charged.', {
      detail: { price_micros: billed },
    });
  assertEnginesRun(deps, lineup);
  const listed = deps.form === 'A' || kind === 'test' || (await isListed(deps.db, mode.id));
  const total = totalQuestions(spec.counts);
  const view: LaunchView = {
    kind,
    dryRun: request.dryRun,
    mode,
    model: request.model,
    run: null,
    counts: spec.counts,
    totalQuestions: total,
    priceMicros: billed,
    estimatedMinutes: estimatedRunMinutes(mode.config, total, deps.runs.window),
    requiresListing: !listed,
    replayed: false,
    quote: null,
    note: '',
    equalCost: arms && { plans: arms.plans, priceMicros: sumPrices({ questionPrices: arms.questionPrices }) },
  };
  return { mode, fingerprint, day, spec, billed, listed, view };
}

/**
 * The run's workflow, whose first step writes the row and the charge (issue 26 item 5): no crash between the two can
 * take money without a run. A workflow of this id already started (a concurrent launch of the same key) is no failure:
 * the caller finds it and waits on its answer.
 */
async function startLaunchWorkflow(
  deps: OperationDeps,
  auth: KeyPrincipal,
  kind: RunKind,
  request: RunRequest,
  priced: PricedLaunch,
  ids: { key: string; runId: string; workflowId: string },
): Promise<void> {
  const { form } = deps;
  const { mode, spec, view } = priced;
  const { key, runId, workflowId } = ids;
  const run: NewRun = {
    id: runId,
    orgId: auth.orgId,
    kind,
    workflowId,
    idempotencyKey: key,
    fingerprint: priced.fingerprint,
    keyKind: callingKeyKind(auth),
    apiKeyId: auth.keyId,
    modeId: mode.id,
    modeVersion: mode.version,
    model: request.model,
    spec,
    totalQuestions: view.totalQuestions,
    billedMicros: priced.billed,
    estimatedMinutes: view.estimatedMinutes,
    ...planPayerOf(auth),
  };
  const dailyLimit = kind === 'test' ? deps.runs.testsPerDay : deps.runs.certificationsPerDay;
  try {
    await startRun(
      deps.client,
      workflowId,
      {
        runId,
        orgId: auth.orgId,
        kind,
        keyMode: auth.keyKind,
        mode,
        spec,
        form,
        window: deps.runs.window,
        historyLimit: deps.runs.historyLimit,
        hedgeAfterMs: deps.runs.hedgeAfterMs,
        launch: { run, dailyLimit },
        ...(request.callbackUrl !== undefined && {
          callback: { url: request.callbackUrl, retryInitialMs: deps.runs.callbackRetryMs ?? DEFAULT_CALLBACK_RETRY_MS },
        }),
      },
      form === 'A' ? mode.id : mode.ticker,
    );
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw notYetAdmitted(runId);
  }
}

/**
 * A test run's dry run keeps its quote (issue 38 item 8): the seed, each question's price and their sum, until the
 * quote TTL, for the launch of the same body by the same key. The advisor's dry runs (a seed given) keep their own.
 */
async function quoteDryRun(deps: OperationDeps, auth: KeyPrincipal, priced: PricedLaunch, opts: LaunchOptions): Promise<LaunchView> {
  const { view, spec, mode } = priced;
  if (view.kind === 'certification') {
    view.note = priced.listed
      ? 'Priced only: nothing was started or charged. A certification is $50 flat; its launch draws fresh questions.'
      : 'Priced only. Certification needs the mode listed in the marketplace first.';
    return view;
  }
  if (opts.seed === undefined) {
    const quote = await insertQuote(deps.db, {
      orgId: auth.orgId,
      apiKeyId: auth.keyId,
      ...payerOf(auth),
      modeId: mode.id,
      model: view.model,
      kind: view.kind,
      request: {
        counts: spec.counts,
        judges: spec.judges,
        repeats: spec.repeats,
        protocol: spec.protocol,
        tiers: spec.tiers,
        punchUp: spec.punchUp,
      },
      seed: spec.seed,
      priceMicros: priced.billed,
      fingerprint: priced.fingerprint,
      modeVersion: mode.version,
      questionPrices: spec.questionPrices ?? {},
      ttlSeconds: deps.runs.quoteTtlSeconds ?? DEFAULT_QUOTE_TTL_S,
    });
    view.quote = { id: quote.id, expiresAt: quote.expiresAt };
  }
  const honoured = view.quote
    ? ` The first launch of the same request with this key before ${view.quote.expiresAt.toISOString()} bills exactly this price and runs these questions; a launch after it is priced afresh.`
    : '';
  view.note = `Priced only: nothing was started or charged.${honoured}`;
  return view;
}

/** A test run's launch honours the newest unexpired dry-run quote of its body by this key, using it up; else its fresh price. */
async function honourQuote(
  deps: OperationDeps,
  auth: KeyPrincipal,
  priced: PricedLaunch,
  opts: LaunchOptions,
): Promise<{ priced: PricedLaunch; quote: QuoteRecord | null }> {
  if (priced.view.kind !== 'test' || opts.seed !== undefined) return { priced, quote: null };
  const quote = await takeDryRunQuote(deps.db, {
    orgId: auth.orgId,
    apiKeyId: auth.keyId,
    kind: 'test',
    fingerprint: priced.fingerprint,
    modeVersion: priced.mode.version,
  });
  if (!quote?.questionPrices) return { priced, quote: null };
  const spec: RunSpec = { ...priced.spec, seed: quote.seed, questionPrices: quote.questionPrices };
  return { priced: { ...priced, spec, billed: quote.priceMicros, view: { ...priced.view, priceMicros: quote.priceMicros } }, quote };
}

/** What a launch says of its charge. */
function chargeNote(kind: RunKind, billed: number, quoted: boolean): string {
  if (billed === 0) return 'A test key runs on simulated engines and bills nothing.';
  if (kind === 'certification') return 'Charged $50 up front; refunded in full unless the run ends with a verdict.';
  const refunds = 'each question no verdict is read on gives back its own price, and a run without results refunds in full.';
  return quoted
    ? `Charged up front at the dry run's quote; ${refunds}`
    : `Priced afresh (no unexpired dry run of this request by this key to honour); charged up front; ${refunds}`;
}

async function launch(
  deps: OperationDeps,
  auth: KeyPrincipal,
  kind: RunKind,
  request: RunRequest,
  opts: LaunchOptions,
): Promise<LaunchView> {
  const { db, form } = deps;
  const fresh = await priceLaunch(deps, auth, kind, request, opts);
  const { fingerprint, view } = fresh;
  if (request.dryRun) return quoteDryRun(deps, auth, fresh, opts);
  if (!fresh.listed)
    throw new QuorumError('listing_required', 'Certification needs the mode listed in the marketplace; list it, then certify.', {
      param: 'model',
    });

  const key = opts.idempotencyKey ?? (await launchKey(deps, auth, kind, fresh));
  const replay = async (run: RunRecord): Promise<LaunchView> => ({
    ...view,
    priceMicros: run.billedMicros,
    run: await replayLaunch(deps, run, fingerprint),
    replayed: true,
    note: 'Replayed: this key already launched this run.',
  });
  const existing = await findRunByKey(db, auth.orgId, kind, key);
  if (existing) return replay(existing);
  const { priced, quote } = await honourQuote(deps, auth, fresh, opts);
  // After the replay: a run already launched is never refused for the allowance it took. A refusal keeps the quote.
  try {
    await assertPlanAffordsRun(db, auth, priced.billed);
  } catch (err) {
    if (quote) await returnDryRunQuote(db, quote.id);
    throw err;
  }
  const runId = opts.runId ?? randomUUID();
  const workflowId =
    opts.workflowId ?? (kind === 'test' ? workflowIds.testRun(auth.orgId, key) : workflowIds.certification(auth.orgId, key));
  await startLaunchWorkflow(deps, auth, kind, request, priced, { key, runId, workflowId });
  faultPoint('launch:after-start');
  const admission = await awaitAdmission(deps.client, workflowId);
  const admitted = await findRunByKey(db, auth.orgId, kind, key);
  const refused = admission && 'refused' in admission ? admission : undefined;
  // A quote whose launch started nothing (refused, or another launch of this key won) stays for the next launch.
  if (quote && (admitted ? admitted.id !== runId : refused !== undefined)) await returnDryRunQuote(db, quote.id);
  // Another launch of this key started the workflow: its run is the answer (or 422 for another body).
  if (admitted && admitted.id !== runId) return replay(admitted);
  if (!admitted) {
    if (refused) throw launchRefusal(form, refused.refused, refused.message);
    throw notYetAdmitted(runId);
  }
  return { ...priced.view, run: admitted, note: chargeNote(kind, priced.billed, quote !== null) };
}

/**
 * A launch whose start or admission could not be confirmed (issue 38 item 11): its workflow may yet write the run and
 * its charge, so the answer says so and names the batch it would be; the same request again shows it, never charged twice.
 */
function notYetAdmitted(runId: string): QuorumError {
  return new QuorumError(
    'service_unavailable',
    `The run's start could not be confirmed: it may still start, as batch \`${runId}\`, and be charged once. Send the same request again (with the same Idempotency-Key, if it had one) to see it.`,
    { retryAfter: 2, detail: { batch_id: runId } },
  );
}

/** A refused admission as the launch's answer: the day's limit with its Retry-After; a refused charge per Form. */
function launchRefusal(form: Form, code: ErrorCode, message: string): QuorumError {
  if (code === 'test_launch_limit_exceeded' || code === 'certify_launch_limit_exceeded')
    return new QuorumError(code, message, { retryAfter: LAUNCH_RETRY_AFTER_S });
  if (code === 'plan_limit_reached') return new QuorumError(code, message);
  return refusal(form, asInsufficientBalance(new QuorumError(code, message)));
}

export function launchTestRun(
  deps: OperationDeps,
  auth: KeyPrincipal,
  input: { request: RunRequest } & LaunchOptions,
): Promise<LaunchView> {
  return launch(deps, auth, 'test', input.request, input);
}

export function launchCertification(
  deps: OperationDeps,
  auth: KeyPrincipal,
  input: { model: string; dryRun: boolean; callbackUrl?: string } & LaunchOptions,
): Promise<LaunchView> {
  const spec = certificationSpec(0);
  const request: RunRequest = {
    model: input.model,
    counts: spec.counts,
    judges: spec.judges,
    repeats: spec.repeats,
    protocol: spec.protocol,
    dryRun: input.dryRun,
    tiers: spec.tiers,
    punchUp: false,
    questionSetId: null,
    ...(input.callbackUrl !== undefined && { callbackUrl: input.callbackUrl }),
  };
  return launch(deps, auth, 'certification', request, input);
}
