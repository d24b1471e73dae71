import { randomUUID } from 'node:crypto';
import type { OperationDeps } from './deps';
import type { KeyPrincipal } from './principal';
import {
  claimApproval,
  insertQuote,
  payerOf,
  markLaunched,
  releaseApproval,
  type QuotedRun,
  type QuoteRecord,
} from '../db/repositories/quotes';
import { QuorumError, type ErrorCode } from '../domain/errors';
import type { Recommendation } from '../domain/advisor';
import type { Tier } from '../domain/modes';
import type { JudgeSlot, JudgingProtocol } from '../domain/run-judging';
import { certificationSpec, type RunKind } from '../domain/runs';
import { workflowIds } from '../domain/workflow-ids';
import { requireScope } from './checks';
import type { RunRequest } from './requests/runs';
import { launchCertification, launchTestRun, type LaunchOptions, type LaunchView } from './run-launch';
import { DEFAULT_QUOTE_TTL_S } from './run-settings';

/**
 * Advisor quotes (spec 02 "Quote lifecycle"): a quote prices the exact run the advisor recommends — its questions
 * fixed by a seed, so the launch draws the very questions it priced — and `approveQuote` launches it once, at no more
 * than that price. The approval is claimed under the quote's row lock (one approval launches; a second at once gets
 * 409 `quote_already_used` naming the same run); the launch is keyed by the quote and its attempt, so a launch
 * re-driven after a crash replays the run it started instead of charging again.
 */

/** What a quote refusal in a successful `ask_advisor` answer says (spec 02 "Quote refusal values"), or a launch's code. */
export type QuoteRefusal = 'invalid_spec' | 'mode_not_owned' | 'chat_history_required' | 'quote_not_stored' | 'quote_failed' | ErrorCode;

/** An approval left unfinished this long (its process died mid-launch) is taken over by the next one. */
const STALE_APPROVAL_MS = 60_000;

/** Whom a quote bills, in the words of a refused approval. */
function payerWords(quote: QuoteRecord): string {
  if (quote.payer === 'none') return 'nobody (a test key’s simulated run)';
  if (quote.payer === 'plan') return 'the plan of the person who asked for it, through a connected app';
  return 'the organisation, through an API key';
}

/** The launch request a quoted run makes. */
export function quotedRequest(model: string, run: QuotedRun, dryRun: boolean): RunRequest {
  return {
    model,
    counts: run.counts,
    judges: run.judges as JudgeSlot[],
    repeats: run.repeats,
    protocol: run.protocol as JudgingProtocol,
    dryRun,
    tiers: run.tiers as Tier[],
    punchUp: run.punchUp,
    questionSetId: null,
  };
}

function launchQuoted(
  deps: OperationDeps,
  auth: KeyPrincipal,
  kind: RunKind,
  model: string,
  run: QuotedRun,
  opts: LaunchOptions & { dryRun: boolean },
): Promise<LaunchView> {
  return kind === 'test'
    ? launchTestRun(deps, auth, { request: quotedRequest(model, run, opts.dryRun), ...opts })
    : launchCertification(deps, auth, { model, ...opts });
}

/** The run a recommendation names, as a quote stores it: the launch's own defaults for what it leaves open. */
function quotedRun(recommendation: Exclude<Recommendation, { kind: 'none' }>): { kind: RunKind; run: QuotedRun } {
  const spec = certificationSpec(0);
  const base = { judges: spec.judges, repeats: 1, protocol: 'pairwise', tiers: ['plus'], punchUp: false };
  return recommendation.kind === 'certification'
    ? { kind: 'certification', run: { ...base, counts: spec.counts, repeats: spec.repeats } }
    : { kind: 'test', run: { ...base, counts: recommendation.counts } };
}

/**
 * Prices and stores a quote for `recommendation` on `model`; a refusal is returned, not thrown (the advisor's answer
 * carries it as `quote_unavailable`).
 */
export async function issueQuote(
  deps: OperationDeps,
  auth: KeyPrincipal,
  input: { model: string; recommendation: Exclude<Recommendation, { kind: 'none' }>; seed?: number },
): Promise<{ quote: QuoteRecord } | { refusal: QuoteRefusal; message: string }> {
  if (deps.runs.chatHistory === false)
    return { refusal: 'chat_history_required', message: 'Quotes need chat history, which this deployment keeps off.' };
  const { kind, run } = quotedRun(input.recommendation);
  const seed = input.seed ?? Number.parseInt(randomUUID().slice(0, 8), 16);
  let priced: LaunchView;
  try {
    priced = await launchQuoted(deps, auth, kind, input.model, run, { dryRun: true, seed });
  } catch (err) {
    if (err instanceof QuorumError) return { refusal: err.code, message: err.message };
    deps.log.error('advisor quote failed', { err });
    return { refusal: 'quote_failed', message: 'The quote could not be made; ask again.' };
  }
  if (priced.requiresListing)
    return { refusal: 'listing_required', message: 'Certification needs the mode listed in the marketplace first.' };
  try {
    const quote = await insertQuote(deps.db, {
      orgId: auth.orgId,
      apiKeyId: auth.keyId,
      ...payerOf(auth),
      modeId: priced.mode.id,
      model: input.model,
      kind,
      request: run,
      seed,
      priceMicros: priced.priceMicros,
      ttlSeconds: deps.runs.quoteTtlSeconds ?? DEFAULT_QUOTE_TTL_S,
    });
    return { quote };
  } catch (err) {
    deps.log.error('advisor quote not stored', { err });
    return { refusal: 'quote_not_stored', message: 'The quote could not be saved; ask again.' };
  }
}

export type Approval = { quote: QuoteRecord; launch: LaunchView };

/** The run a used quote launched, for the 409's `svc`. */
function usedError(quote: QuoteRecord, message: string): QuorumError {
  return new QuorumError('quote_already_used', message, { detail: { quote_id: quote.id, batch_id: quote.runId, kind: quote.kind } });
}

export async function approveQuote(deps: OperationDeps, auth: KeyPrincipal, quoteId: string): Promise<Approval> {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(quoteId))
    throw new QuorumError('invalid_quote_id', '`quote_id` is not a quote id (the `quote.quote_id` of an ask_advisor answer).', {
      param: 'quote_id',
    });
  if (deps.runs.chatHistory === false)
    throw new QuorumError('chat_history_required', 'Advisor quotes need chat history, which is off; use run_test or certify_mode.');
  const claim = await claimApproval(deps.db, { id: quoteId, orgId: auth.orgId, ...payerOf(auth), staleAfterMs: STALE_APPROVAL_MS });
  switch (claim.kind) {
    case 'not_found':
      throw new QuorumError('quote_not_found', `No quote ${quoteId} under this organisation.`, { param: 'quote_id' });
    case 'expired':
      throw new QuorumError('quote_expired', 'This quote has expired; ask the advisor for a new one.', { param: 'quote_id' });
    case 'used':
      throw usedError(claim.quote, 'This quote was already approved; its run is in `svc.batch_id`.');
    case 'in_flight':
      throw usedError(claim.quote, 'This quote is being approved right now; its run is in `svc.batch_id`.');
    case 'payer_mismatch':
      throw new QuorumError('payer_mismatch', `This quote bills ${payerWords(claim.quote)}; approve it where it was quoted.`, {
        param: 'quote_id',
      });
    case 'claimed':
      return launchClaimed(deps, auth, claim.quote);
  }
}

async function launchClaimed(deps: OperationDeps, auth: KeyPrincipal, quote: QuoteRecord): Promise<Approval> {
  const runId = quote.runId as string;
  let launch: LaunchView;
  try {
    // The tool's own scope is `tests`; launching a certification also needs `certify`, as POST /v1/certify does.
    if (quote.kind === 'certification') requireScope(auth, 'certify');
    launch = await launchQuoted(deps, auth, quote.kind, quote.model, quote.request, {
      dryRun: false,
      seed: quote.seed,
      runId,
      idempotencyKey: `quote-${quote.id}-${quote.attempt}`,
      workflowId: workflowIds.quote(quote.id, quote.attempt),
      maxPriceMicros: quote.priceMicros,
    });
  } catch (err) {
    throw await approvalFailed(deps, auth, quote, err);
  }
  // The run is launched whatever happens to this write: a later approval re-drives, finds it, and marks it.
  await markLaunched(deps.db, quote.id, launch.run?.id ?? runId);
  return { quote: { ...quote, state: 'launched' }, launch };
}

/** Reopens the quote as the failure requires and says why, with the spec's code. */
async function approvalFailed(deps: OperationDeps, auth: KeyPrincipal, quote: QuoteRecord, err: unknown): Promise<QuorumError> {
  const code = err instanceof QuorumError ? err.code : undefined;
  // A run was charged under this attempt's key and credited back (a start that failed, or one cut off earlier).
  const creditedBack = code === 'service_unavailable' || code === 'reconciliation_required';
  await releaseApproval(deps.db, quote.id, creditedBack).catch((e: unknown) => deps.log.error('quote approval not released', { err: e }));
  if (code === 'requoted') {
    // The same questions at today's price.
    const again = await issueQuote(deps, auth, {
      model: quote.model,
      seed: quote.seed,
      recommendation:
        quote.kind === 'certification'
          ? { kind: 'certification', reason: '' }
          : { kind: 'test_run', counts: quote.request.counts, reason: '' },
    });
    return new QuorumError('requoted', 'The run now costs more than this quote; nothing was launched. A new quote is in `svc.quote`.', {
      detail: 'quote' in again ? { quote: again.quote } : {},
    });
  }
  if (creditedBack || code === undefined) {
    if (code === undefined) deps.log.error('quote launch failed', { err });
    return new QuorumError(
      'launch_failed',
      'The run’s start could not be confirmed and nothing stays charged; approve the same quote again.',
    );
  }
  return err as QuorumError;
}
