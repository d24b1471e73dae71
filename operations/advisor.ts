import type { OperationDeps } from './deps';
import type { KeyPrincipal } from './principal';
import { findMode } from '../db/repositories/modes';
import { recentCalls } from '../db/repositories/receipts';
import { findRun, modeVersionResults, questionResults, type RunRecord } from '../db/repositories/runs';
import type { QuoteRecord } from '../db/repositories/quotes';
import { advise, type Advice, type ReceiptFacts } from '../domain/advisor';
import { QuorumError } from '../domain/errors';
import { BUCKET_NAMES } from '../domain/form';
import { quote } from '../domain/estimate';
import type { ModeRecord } from '../domain/modes';
import { summarizeRun } from '../domain/run-summary';
import type { QuestionResult } from '../domain/runs';
import { callQuoteInput, catalogPrices, ownKeyFamilies, ratesOf } from './estimate';
import { issueQuote, type QuoteRefusal } from './quotes';

/**
 * `ask_advisor` (spec 02): advice on one of the caller's modes computed from its recorded runs (pooled over the
 * current version's runs, or one run's with `batch_id`) and its recent receipts, by `domain/advisor.ts`; and a quote
 * for the run it recommends. Every number in the words is also in the data. Reading nothing is billed.
 */

/** Recent calls the receipt figures cover. */
const RECENT_CALLS = 200;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface AdviceResult {
  mode: ModeRecord;
  model: string;
  question: string | null;
  /** The runs the figures come from. */
  runs: Pick<RunRecord, 'id' | 'kind' | 'state'>[];
  advice: Advice;
  quote: QuoteRecord | null;
  quoteUnavailable: { code: QuoteRefusal; message: string } | null;
}

async function reading<T>(work: () => Promise<T>, code: 'advisor_unavailable' | 'status_unavailable'): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof QuorumError) throw err;
    throw code === 'status_unavailable'
      ? new QuorumError('status_unavailable', 'The run’s status could not be read; retry.')
      : new QuorumError('advisor_unavailable', 'The advisor could not read this mode’s results; nothing was billed. Retry.');
  }
}

async function runResults(
  deps: OperationDeps,
  auth: KeyPrincipal,
  mode: ModeRecord,
  batchId: string | undefined,
): Promise<{ runs: AdviceResult['runs']; results: QuestionResult[] }> {
  if (batchId === undefined)
    return reading(
      () => modeVersionResults(deps.db, { orgId: auth.orgId, modeId: mode.id, modeVersion: mode.version }),
      'advisor_unavailable',
    );
  if (!UUID.test(batchId))
    throw new QuorumError('invalid_batch_id', '`batch_id` is not a run id (a `batch_id` of run_test or certify_mode).', {
      param: 'batch_id',
    });
  return reading(async () => {
    const run = await findRun(deps.db, auth.orgId, batchId);
    if (!run || run.modeId !== mode.id)
      throw new QuorumError('invalid_batch_id', `No run ${batchId} of ${mode.ticker} in this organisation.`, { param: 'batch_id' });
    return { runs: [{ id: run.id, kind: run.kind, state: run.state }], results: await questionResults(deps.db, run.id) };
  }, 'status_unavailable');
}

/** The recent calls, each beside what the estimate would quote for it today. */
async function receiptFacts(deps: OperationDeps, auth: KeyPrincipal, mode: ModeRecord): Promise<ReceiptFacts[]> {
  const [calls, rates, ownFamilies] = await Promise.all([
    recentCalls(deps.db, { orgId: auth.orgId, modeId: mode.id, limit: RECENT_CALLS }),
    ratesOf(deps.db, mode),
    ownKeyFamilies(deps.db, auth),
  ]);
  return calls.map((c) => ({
    fallback: c.substitutions > 0,
    truncated: c.finishReason === 'length',
    converged: c.converged,
    billedMicros: c.billedMicros,
    quotedMicros:
      quote(
        callQuoteInput(deps, auth, {
          mode,
          tier: c.tier,
          classification: c.classification,
          promptTokens: c.promptTokens,
          rates,
          ownFamilies,
        }),
        catalogPrices(deps.engines),
      )?.totalMicros ?? null,
  }));
}

export async function askAdvisor(
  deps: OperationDeps,
  auth: KeyPrincipal,
  input: { model: string; question?: string; batchId?: string },
): Promise<AdviceResult> {
  if (/(:LAB|@[^@]*)$/i.test(input.model))
    throw new QuorumError('suffix_not_supported', 'The advisor reads a mode as it stands: drop the `:LAB` or `@version` suffix.', {
      param: 'model',
    });
  const mode = await reading(() => findMode(deps.db, { orgId: auth.orgId, form: deps.form, model: input.model }), 'advisor_unavailable');
  if (!mode)
    throw new QuorumError('mode_not_found', `No mode ${JSON.stringify(input.model)} that this organisation has.`, { param: 'model' });
  const [{ runs, results }, facts] = await Promise.all([
    runResults(deps, auth, mode, input.batchId),
    reading(() => receiptFacts(deps, auth, mode), 'advisor_unavailable'),
  ]);
  const advice = advise(summarizeRun('test', results), facts, BUCKET_NAMES[deps.form], {
    aggregationMethod: mode.config.aggregation?.method,
  });
  const result: AdviceResult = {
    mode,
    model: input.model,
    question: input.question ?? null,
    runs,
    advice,
    quote: null,
    quoteUnavailable: null,
  };
  if (advice.recommendation.kind === 'none') return result;
  const issued = await issueQuote(deps, auth, { model: input.model, recommendation: advice.recommendation });
  if ('quote' in issued) result.quote = issued.quote;
  else result.quoteUnavailable = { code: issued.refusal, message: issued.message };
  return result;
}
