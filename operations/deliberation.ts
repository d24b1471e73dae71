import { WorkflowExecutionAlreadyStartedError, WorkflowFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { msToNumber } from '@temporalio/common/lib/time';
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { callerMessage } from '../domain/caller-errors';
import { classifyHeuristic } from '../domain/classifier';
import { QuorumError } from '../domain/errors';
import type { Form } from '../domain/form';
import type { ChatMessage } from '../domain/messages';
import type { ModeRecord, Tier } from '../domain/modes';
import type { Outcome, Settlement } from '../domain/outcome';
import { assertBillableRow } from '../db/repositories/ledger';
import { assertPlanAllows } from '../db/repositories/plans';
import type { PlanPayer } from '../domain/plan-rules';
import { settleOutcome } from '../db/repositories/receipts';
import {
  claimOrFind,
  claimRequest,
  findRequestByKey,
  answeredByKey,
  markRequestFailed,
  outcomeOf,
  unsettledOf,
  type ClaimAdmission,
  type ClaimRow,
  type RequestRow,
  type RequestState,
} from '../db/repositories/requests';
import type { BillableRow } from '../db/repositories/ledger';
import { inProgressRetryAfter, stageTimes } from '../domain/retry-after';
import { workflowIds } from '../domain/workflow-ids';
import { observedStageTimes } from '../db/repositories/stage-times';
import { startDeliberation, workflowStatus } from '../starters/deliberation';
import { ENGINE_CALL } from '../workflows/engine-call-policy';
import { deliberationProgressQuery, type DeliberationProgress } from '../workflows/messages';
import { deliberationAnswered, deliberationFailed, deliberationStarted } from './metrics';
import type { OperationDeps } from './deps';
import type { CallOptions } from './requests/common';

export interface DeliberationRequest {
  orgId: string;
  apiKeyId: string;
  keyKind: 'live' | 'test';
  /** The `Idempotency-Key` header, or `derivedIdempotencyKey(...)` when none was sent. */
  idempotencyKey: string;
  /** sha256 of the canonical body: Form A answers 422 when a succeeded key comes back with another body. */
  fingerprint: string;
  form: Form;
  mode: ModeRecord;
  model: string;
  tier: Tier;
  messages: ChatMessage[];
  promptTokens: number;
  /** null: no ceiling (a call on a plan). */
  ceilingMicros: number | null;
  /** A connected app's call: the person's plan pays (see DeliberationInput.payer); absent, the organisation does. */
  payer?: PlanPayer;
  /** The live key's monthly budget, which its hold must fit (DeliberationInput.keyBudget); absent: none. */
  keyBudgetMicros?: bigint;
  /** Told once this call's workflow has started, with its request id (a background response answers then, issue 40). */
  onStarted?: (requestId: string) => Promise<void>;
  /** false: no one can watch this call, so its workflow stores no step events (DeliberationInput.stepEvents). */
  stepEvents?: false;
  /** OpenAI's options (issue 40): the answer's go to the workflow, `user` and `metadata` onto the request row. */
  options?: CallOptions;
}

/** What a deliberation needs of the operations' deps: Postgres for its request row, Temporal for its workflow. */
type DeliberationDeps = Pick<OperationDeps, 'db' | 'client'>;

/**
 * A claim whose workflow has not appeared this long after it was written never will: its start failed or its API
 * died (a start is one round trip with a 5 s deadline, starters/deliberation.ts). Younger, its start may be in flight.
 */
export const ABANDONED_CLAIM_MS = 30_000;

async function replay(db: Knex, requestId: string): Promise<{ outcome: Outcome; replayed: true }> {
  const outcome = await outcomeOf(db, requestId);
  if (!outcome)
    throw new QuorumError('internal_error', 'The stored answer for this key could not be read; retry with the same Idempotency-Key.', {
      requestId,
    });
  return { outcome, replayed: true };
}

/**
 * `Retry-After` of a 503 `mode_unavailable`: the engine retry policy's longest wait between tries of a failing
 * provider. The call ended after those tries gave up, so a retry sooner mostly meets the same outage.
 */
const MODE_UNAVAILABLE_RETRY_AFTER_S = Math.ceil(msToNumber(ENGINE_CALL.retry?.maximumInterval ?? '20 seconds') / 1000);

/** Maps the workflow's failure to the spec's error; the failure type is the error code where the table has it. */
function toQuorumError(err: WorkflowFailedError, requestId: string): QuorumError {
  const cause = err.cause;
  if (cause instanceof ApplicationFailure && cause.type && QuorumError.isCode(cause.type)) {
    const retryAfter = cause.type === 'mode_unavailable' ? MODE_UNAVAILABLE_RETRY_AFTER_S : undefined;
    // A workflow's message as a caller may read it (a workflow begun before issue 27 built longer ones).
    return new QuorumError(cause.type, callerMessage(cause.message), { requestId, retryAfter });
  }
  return new QuorumError('upstream_provider_error', 'The deliberation failed; nothing was billed. Retry with the same Idempotency-Key.', {
    requestId,
  });
}

/**
 * The error a failed call's caller was given, read again from its workflow (an MCP task's result, issue 40 item 5);
 * undefined when the workflow cannot say within `waitMs` (gone, or not failed after all).
 */
export async function failureOf(client: Client, workflowId: string, requestId: string, waitMs = 2_000): Promise<QuorumError | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(resolve, waitMs, undefined)));
  const read = client.workflow
    .getHandle(workflowId)
    .result()
    .then(
      () => undefined,
      (err: unknown) => (err instanceof WorkflowFailedError ? toQuorumError(err, requestId) : undefined),
    );
  try {
    return await Promise.race([read, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** A stored outcome settled now, once; a database that still refuses it is 502 again, and nothing ran. */
async function settleAgain(db: Knex, unsettled: Settlement): Promise<{ outcome: Outcome; replayed: boolean }> {
  const requestId = unsettled.outcome.requestId;
  try {
    await settleOutcome(db, unsettled);
  } catch (err) {
    if (err instanceof QuorumError) throw new QuorumError(err.code, err.message, { requestId });
    throw err;
  }
  return { outcome: unsettled.outcome, replayed: false };
}

/**
 * A progress query the worker does not answer this soon is skipped: the estimate then assumes the call just began.
 * Short, because a deliberation's engine calls run inside its workflow task and the server holds a query until that
 * task completes or heartbeats (every 4 s, issue 31): a longer wait mostly delays the 409 itself.
 */
const PROGRESS_QUERY_MS = 250;

/** The running call's stage, or undefined when its workflow cannot say (not started yet, gone, or its worker busy). */
async function progressOf(client: Client, workflowId: string): Promise<DeliberationProgress | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(resolve, PROGRESS_QUERY_MS, undefined)));
  const asked = client.workflow
    .getHandle(workflowId)
    .query(deliberationProgressQuery)
    .catch(() => undefined);
  try {
    return await Promise.race([asked, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * 409 naming the running call's request id, so the caller can read its receipt once it ends, with a `Retry-After`
 * of what the call has left (its stage and the mode's typical stage times, domain/retry-after.ts), so a client that
 * honours it retries once the answer is stored and gets the replay (issue 28 item 7).
 */
async function inProgress(deps: DeliberationDeps, input: DeliberationRequest, workflowId: string): Promise<QuorumError> {
  const [running, progress, observed] = await Promise.all([
    findRequestByKey(deps.db, input.orgId, input.idempotencyKey),
    progressOf(deps.client, workflowId),
    observedStageTimes(deps.db, { modeId: input.mode.id, tier: input.tier, keyKind: input.keyKind }),
  ]);
  return new QuorumError('request_in_progress', 'A call with this Idempotency-Key is still running; retry after it ends.', {
    retryAfter: inProgressRetryAfter(progress, stageTimes(observed)),
    requestId: running?.id,
  });
}

/**
 * The key's live row judged when the first statement claimed nothing (DESIGN §4): a stored answer replayed (or
 * settled once more), 409 while its workflow runs, 402 before a new run (DESIGN §8), else the key claimed for this
 * run (a failed, capped or abandoned run taken over). Returns the answer to give, or undefined once claimed.
 */
async function judgeKey(
  deps: DeliberationDeps,
  input: DeliberationRequest,
  claim: ClaimRow,
  first: { request: RequestRow | undefined; balance: BillableRow | undefined; orgHold: bigint | undefined },
): Promise<{ outcome: Outcome; replayed: boolean } | undefined> {
  const { db, client } = deps;
  const { workflowId } = claim;
  const existing = first.request;
  // A cancelled call (issue 40) billed what ran and gave no answer: its key may run again, in either Form.
  const takeOver: RequestState[] = input.form === 'B' ? ['failed', 'capped', 'cancelled'] : ['failed', 'cancelled'];
  if (existing?.state === 'succeeded' || (existing?.state === 'capped' && input.form === 'A')) {
    if (input.form === 'A' && existing.fingerprint !== input.fingerprint) {
      throw new QuorumError('idempotency_key_reused', 'This Idempotency-Key was used with a different request body.', {
        param: 'Idempotency-Key',
      });
    }
    return replay(db, existing.id);
  }
  // The engines ran but the database refused the outcome: settle what they said, never pay them for a second run.
  const sameBody = input.form === 'B' || existing?.fingerprint === input.fingerprint;
  if (existing?.state === 'failed' && existing.error_code === 'cost_unreadable' && sameBody) {
    const unsettled = await unsettledOf(db, existing.id);
    if (unsettled) return settleAgain(db, unsettled);
  }
  // The workflow id is the lock (DESIGN §4), and a row's state follows its workflow's. A running or failed row is
  // taken over only when its workflow ended without an answer, or (running) never started and never will: a start
  // that was cut off may land after its row was marked failed, and a claim may be read before its start lands.
  let abandonedRunningId: string | undefined;
  if (existing?.state === 'running' || existing?.state === 'failed') {
    const status = await workflowStatus(client, workflowId);
    if (status === 'RUNNING') {
      if (existing.state === 'failed') throw await inProgress(deps, input, workflowId);
    } else if (status === 'COMPLETED') {
      // It answered: that is the key's one billed run, whichever of its rows it settled.
      const answered = await answeredByKey(db, input.orgId, input.idempotencyKey);
      if (answered) return replay(db, answered.id);
    }
    const claimAge = Date.now() - new Date(existing.created_at).getTime();
    if (existing.state === 'running' && status !== 'RUNNING' && (status !== 'NOT_FOUND' || claimAge > ABANDONED_CLAIM_MS))
      abandonedRunningId = existing.id;
  }
  // DESIGN §8: after idempotency (a call still in progress is 409 whatever the balance), 402 before anything
  // runs (the balance, or a billing state of the organisation; on a plan, its allowance), so a refused call leaves
  // no request row and starts no workflow. A test key bills nothing, so no billing state refuses it.
  const stillRunning = existing?.state === 'running' && abandonedRunningId === undefined;
  if (input.keyKind === 'live' && !stillRunning) {
    if (input.payer) await assertPlanAllows(db, input.payer.personId, BigInt(input.payer.holdMicros));
    else assertBillableRow(first.balance, input.orgId, first.orgHold ?? 0n);
  }
  const claimed = await claimRequest(db, claim, { takeOver, unclaimed: existing === undefined, abandonedRunningId });
  if (!claimed) throw await inProgress(deps, input, workflowId);
  return undefined;
}

/**
 * DESIGN §4: the idempotency key is the workflow's identity. running → 409; succeeded → the stored answer;
 * failed, or capped on Form B → a new run under the same workflow id. The caller's disconnect does not cancel
 * the workflow: it finishes, settles once, and a retry with the same key replays it.
 */
export async function conductDeliberation(
  deps: DeliberationDeps,
  input: DeliberationRequest,
): Promise<{ outcome: Outcome; replayed: boolean }> {
  const startedMs = performance.now();
  const { db, client } = deps;
  const workflowId = workflowIds.deliberation(input.orgId, input.idempotencyKey);
  const requestId = `req_${randomBytes(12).toString('hex')}`;
  const claim: ClaimRow = {
    id: requestId,
    orgId: input.orgId,
    apiKeyId: input.apiKeyId,
    idempotencyKey: input.idempotencyKey,
    workflowId,
    fingerprint: input.fingerprint,
    modeId: input.mode.id,
    model: input.model,
    endUser: input.options?.user,
    metadata: input.options?.metadata,
  };
  // One round trip claims a new key (the workflow id is the lock): the key's row, the balance a live call the
  // organisation pays must cover (402 before anything runs) and the claim, in one statement; a call on a plan has its
  // allowance judged first, so it claims after. Anything else (the key known, a refusal) is judged as before.
  const orgHold = input.keyKind === 'live' && !input.payer ? BigInt(input.ceilingMicros ?? 0) : undefined;
  const admission: ClaimAdmission =
    orgHold !== undefined ? { kind: 'balance', holdMicros: orgHold } : input.payer ? { kind: 'never' } : { kind: 'always' };
  const first = await claimOrFind(db, claim, admission);
  if (!first.claimed) {
    const answer = await judgeKey(deps, input, claim, { ...first, orgHold });
    if (answer) return answer;
  }

  let handle;
  try {
    handle = await startDeliberation(
      client,
      {
        requestId,
        orgId: input.orgId,
        keyMode: input.keyKind,
        form: input.form,
        mode: {
          id: input.mode.id,
          ticker: input.mode.ticker,
          version: input.mode.version,
          configHash: input.mode.configHash,
          config: input.mode.config,
        },
        tier: input.tier,
        messages: input.messages,
        promptTokens: input.promptTokens,
        ceilingMicros: input.ceilingMicros,
        payer: input.payer,
        ...(input.keyBudgetMicros !== undefined && {
          keyBudget: { keyId: input.apiKeyId, monthlyMicros: input.keyBudgetMicros.toString() },
        }),
        // The heuristic is all a mode without a classifier model runs: classified here, the workflow skips a step.
        classification: input.mode.config.staff.classifier ? undefined : classifyHeuristic(input.messages),
        createdAt: new Date().toISOString(),
        ...(input.options?.answer && { answer: input.options.answer }),
        ...(input.stepEvents === false && { stepEvents: false }),
      },
      { idempotencyKey: input.idempotencyKey, model: input.model },
    );
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) throw await inProgress(deps, input, workflowId);
    // A start cut off by its deadline may still land: a retry finds its workflow before it runs another.
    await markRequestFailed(db, requestId, 'service_unavailable');
    throw new QuorumError('service_unavailable', 'The deliberation could not be started; retry with the same Idempotency-Key.', {
      requestId,
      retryAfter: 2,
    });
  }

  deliberationStarted(handle.eagerlyStarted);
  await input.onStarted?.(requestId);
  // Counted here, where the run ends for its caller: one counter and two observations, no round trip.
  try {
    const outcome = await handle.result();
    deliberationAnswered(startedMs, outcome);
    return { outcome, replayed: false };
  } catch (err) {
    const failure = err instanceof WorkflowFailedError ? toQuorumError(err, requestId) : err;
    deliberationFailed(startedMs, failure instanceof QuorumError ? failure.code : 'unknown');
    throw failure;
  }
}
