import {
  ApplicationFailure,
  CancellationScope,
  deprecatePatch,
  isCancellation,
  proxyLocalActivities,
  proxySinks,
  setHandler,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { AnswerStream } from '../activities/answer-stream';
import type { ClassifyResult, DeliberationActivities, KeyBudget, PrepareRefusal } from '../activities/deliberation';
import type { KeyKind } from '../domain/api-keys';
import { isBillingRefusal } from '../domain/billing';
import type { Classification, Lane } from '../domain/classifier';
import type { DeliberationEvent } from '../domain/deliberation-events';
import { CostMeter } from '../domain/cost-meter';
import type { ErrorCode } from '../domain/errors';
import type { Form } from '../domain/form';
import type { ChatMessage } from '../domain/messages';
import type { AnswerOptions } from '../domain/answer-options';
import type { ResolvedMode, Tier } from '../domain/modes';
import type { ClassifierCall, Outcome, Settlement } from '../domain/outcome';
import type { PlanPayer } from '../domain/plan-rules';
import { unavailableMessage } from '../domain/caller-errors';
import { assembleCancelledOutcome, assembleOutcome } from '../domain/outcome-assembly';
import { laneFor, type Seating } from '../domain/seat-assignment';
import { failureReason } from './engine-chain';
import { untilDone } from './local-activity-timeouts';
import { deliberationProgressQuery, type DeliberationProgress, type DeliberationSinks } from './messages';
import { runPanel, type PanelRecord, type PanelStep } from './panel';
import { QuorumLane, QuorumStatus } from './search-attributes';

export interface DeliberationInput {
  requestId: string;
  orgId: string;
  /** The key's kind; named `keyMode` in recorded histories, so it keeps that name. */
  keyMode: KeyKind;
  form: Form;
  mode: ResolvedMode;
  tier: Tier;
  messages: ChatMessage[];
  /** Counted by the API with the engines' tokenizer (the workflow has none). */
  promptTokens: number;
  /** null: no ceiling (a call on a plan). */
  ceilingMicros: number | null;
  /**
   * Set on a connected app's call: the person's plan pays the engines' real cost (no fees, no ceiling, receipt
   * `payer: plan`) and holds on the plan, not the organisation's balance. Absent: the organisation pays by today's rules.
   */
  payer?: PlanPayer;
  /** A live key's monthly budget (issue 41 item 3): its hold is refused past it. Absent: no budget, or a plan pays. */
  keyBudget?: KeyBudget;
  /**
   * The prompt's classification when the API could give it: a mode that names no classifier model is classified by
   * the heuristic, which the API has already run (and the lane search attribute was set at start). Absent, the
   * workflow classifies (the mode's small model, the heuristic on its failure).
   */
  classification?: Classification;
  createdAt: string;
  /** What the caller asked of the answer (OpenAI's `response_format`, `max_tokens`, sampling; issue 40); absent: nothing. */
  answer?: AnswerOptions;
  /**
   * false: no one can watch this call (a chat completion has no stream and no later `GET`), so its step events are not
   * stored. Absent: they are (a response, an MCP call, and every execution begun before issue 42 added the field).
   */
  stepEvents?: false;
}

// Short steps (Postgres, and the classifier's small model, capped at 8 s) run as local activities: no extra server
// round trip on the hot path. They retry until they succeed: a database blip must not lose a paid answer.
const { classify, prepare, failRequest, settle, checkAnswer } = proxyLocalActivities<DeliberationActivities>(
  untilDone({ initialInterval: '200 milliseconds', maximumInterval: '10 seconds', nonRetryableErrorTypes: ['QuorumError'] }),
);

/** Spec error codes a deliberation can end with after its reservation; each releases the hold. */
type AbandonCode = PrepareRefusal['refused'] | Extract<ErrorCode, 'mode_unavailable' | 'cost_unreadable' | 'response_format_failed'>;

/**
 * The code of a `prepare` that failed for good. Before it returned refusals as values, a refusal was thrown with the code
 * as its failure type (any other failure ended the call `insufficient_balance`): read so, a call prepared by an earlier
 * worker and still open replays and ends as it would have.
 */
function priorRefusalCode(err: unknown): AbandonCode {
  const type = err instanceof ApplicationFailure ? err.type : undefined;
  if (type === 'plan_limit_reached' || type === 'mode_resolution_mismatch') return type;
  return type && isBillingRefusal(type) ? type : 'insufficient_balance';
}

type Step = PanelStep | { stage: 'settling' | 'done' };

/** Where the call is, answered to a caller that waits (the MCP server's progress notifications); adds nothing to the history. */
function trackProgress(): (next: Step) => void {
  const progress: DeliberationProgress = { stage: 'classifying', round: 0, seats: 0, seatsAnswered: 0, steps: 0 };
  setHandler(deliberationProgressQuery, () => progress);
  return (next) => {
    Object.assign(progress, next, { steps: progress.steps + 1 });
  };
}

const { deliberationEvents } = proxySinks<DeliberationSinks>();

interface Emit {
  (event: DeliberationEvent): void;
  /** Where an answer written now streams: after the last step told (issue 53 item 4); undefined when no one can watch. */
  answerStream(): AnswerStream | undefined;
}

/**
 * The call's step events for its caller's stream (issue 40 item 2), numbered from 0 in the order the workflow takes
 * them: a worker that takes the call over numbers a step it runs again as the first did. Adds nothing to the history.
 * A call no one can watch stores none: the worker holds each activation until its events are written (issue 42).
 */
function eventsOf({ requestId, stepEvents }: DeliberationInput): Emit {
  if (stepEvents === false) return Object.assign(() => undefined, { answerStream: () => undefined });
  let index = 0;
  return Object.assign((event: DeliberationEvent) => deliberationEvents.record(requestId, index++, event), {
    answerStream: () => (index > 0 ? { requestId, step: index - 1 } : undefined),
  });
}

/** How a call ends without an answer once it has begun; each releases what it holds. */
interface Abandoning {
  /** Ends the call without an answer: the hold is released, the request marked failed, nothing billed. */
  abandon(code: AbandonCode, message: string, unsettled?: Settlement): Promise<never>;
  /** A step whose (non-retryable) failure ends the call with the code `codeOf` gives it; a cancellation passes through. */
  orAbandon<T>(codeOf: (err: unknown) => AbandonCode, work: () => Promise<T>, unsettled?: Settlement): Promise<T>;
}

function abandoning({ orgId, requestId }: DeliberationInput, emit: Emit): Abandoning {
  const abandon = async (code: AbandonCode, message: string, unsettled?: Settlement): Promise<never> => {
    await CancellationScope.nonCancellable(() => failRequest({ orgId, requestId, code, unsettled }));
    emit({ type: 'ended' });
    upsertSearchAttributes([{ key: QuorumStatus, value: 'failed' }]);
    throw ApplicationFailure.nonRetryable(message, code);
  };
  const orAbandon = async <T>(codeOf: (err: unknown) => AbandonCode, work: () => Promise<T>, unsettled?: Settlement): Promise<T> => {
    try {
      return await work();
    } catch (err) {
      if (isCancellation(err)) throw err;
      return abandon(codeOf(err), failureReason(err), unsettled);
    }
  };
  return { abandon, orAbandon };
}

/**
 * DESIGN §5 step 1: the classification handed in, else the mode's small model (the heuristic on its failure); the lane;
 * and the model's call, when one answered, to count and bill.
 */
async function classifyCall(input: DeliberationInput): Promise<{ classification: Classification; lane: Lane; call?: ClassifierCall }> {
  const { mode, tier } = input;
  // A cancel (issue 40) waits for the classification and the hold: it then settles a call whose hold is known.
  const classified: ClassifyResult =
    input.classification ??
    (await CancellationScope.nonCancellable(() => classify({ messages: input.messages, engineId: mode.config.staff.classifier?.engine })));
  const { classifierCall: call, ...classification } = classified;
  const lane = laneFor(mode.config, tier, classification);
  // Handed in, the classification named the lane at start already: one search attribute update fewer per call.
  if (!input.classification) {
    upsertSearchAttributes([
      { key: QuorumLane, value: lane },
      { key: QuorumStatus, value: 'running' },
    ]);
  }
  return { classification, lane, call };
}

/**
 * DESIGN §5 step 2, and who sits where, in one step: a plan holds its bound of the call's cost, the organisation the
 * call's ceiling, a test key nothing. A mode handed over that is not the stored version the API resolved ends
 * `mode_resolution_mismatch`; a hold refused (the balance, a billing state such as a quota used since the API checked,
 * the key's monthly budget, the person's plan) ends with the refusal's code.
 */
async function holdAndSeat(input: DeliberationInput, lane: Lane, { abandon, orAbandon }: Abandoning): Promise<Seating> {
  const { orgId, requestId, mode, tier, payer } = input;
  const hold =
    input.keyMode !== 'live'
      ? undefined
      : payer
        ? { amountMicros: payer.holdMicros, personId: payer.personId }
        : { amountMicros: input.ceilingMicros ?? 0, keyBudget: input.keyBudget };
  const seating = await orAbandon(priorRefusalCode, () =>
    CancellationScope.nonCancellable(() =>
      prepare({ orgId, requestId, keyMode: input.keyMode, mode, tier, lane, hold, onPlan: payer !== undefined }),
    ),
  );
  if ('refused' in seating) return abandon(seating.refused, seating.message);
  return seating;
}

/** DESIGN §5 step 9: what the call may cost, tracked after every step. */
function costMeterFor(input: DeliberationInput, classification: Classification, lane: Lane): CostMeter {
  // Issue 26's change, its old branch retired (docs/cluster-operations.md, "Patches and local activities").
  deprecatePatch('own-key-seats-billed-by-provider');
  return new CostMeter({
    form: input.form,
    fees: input.mode.config.fees,
    depth: classification.depth,
    lane,
    ceilingMicros: input.ceilingMicros,
    realCostOnly: input.payer !== undefined,
  });
}

/**
 * DESIGN §5 step 10: settle retries through database outages; it fails for good only when the outcome cannot be
 * written at all. A settle the database refuses for good keeps the outcome on the request: a retry settles it, not a
 * second deliberation.
 */
async function settleOutcome(input: DeliberationInput, outcome: Outcome, { orAbandon }: Abandoning): Promise<void> {
  const settlement: Settlement = { outcome, form: input.form, billed: input.keyMode === 'live', modeVersion: input.mode.version };
  await orAbandon(
    () => 'cost_unreadable',
    // A settle under way when a cancel comes finishes: the call has its answer and is billed for it.
    () => CancellationScope.nonCancellable(() => settle(settlement)),
    settlement,
  );
}

/**
 * A caller's `response_format` (issue 40): an answer that does not meet it ends the call `response_format_failed`,
 * nothing billed (the hold released), as any call that ends without an answer.
 */
async function checkFormat(input: DeliberationInput, answer: string, { abandon }: Abandoning): Promise<void> {
  const format = input.answer?.format;
  if (!format) return;
  const problem = await checkAnswer({ text: answer, format });
  if (problem)
    await abandon(
      'response_format_failed',
      `The panel's answer did not meet \`response_format\` (${problem}); nothing was billed. Retry, or relax the schema.`,
    );
}

/** What an operator reads of the call in the Temporal UI. */
function markDone(outcome: Outcome, lane: Lane, judgeSeed: number): void {
  upsertSearchAttributes([{ key: QuorumStatus, value: outcome.status }]);
  upsertMemo({
    summary: `${lane} · ${outcome.rounds} round(s) · ${outcome.seatsAnswered}/${outcome.seats} seats · judged by ${outcome.bestSeatJudgedBy} · finish ${outcome.finishReason}`,
    billedMicros: outcome.money.billedMicros,
    judgeSeed,
    workflow: workflowInfo().workflowId,
  });
}

/** What a call has done so far: a cancelled one settles it (issue 40 item 3). */
interface Ran {
  classified?: { classification: Classification; lane: Lane; call?: ClassifierCall };
  seating?: Seating;
  meter?: CostMeter;
  /** What answered in the panel, as it records it. */
  panel: PanelRecord;
}

/**
 * DESIGN §5: classify → hold and seat → panel → settle. Idempotency is the workflow id (DESIGN §4). A cancel (the
 * workflow's cancellation, issue 40) stops the panel's engine calls in flight (their HTTP requests are aborted) and
 * ends the call `cancelled`: what answered before is billed, the rest of the hold released, the receipt says so.
 */
export async function deliberationWorkflow(input: DeliberationInput): Promise<Outcome> {
  const startedMs = Date.now();
  const ran: Ran = { panel: { passes: [], judge: null } };
  const emit = eventsOf(input);
  try {
    return await deliberate(input, startedMs, ran, emit);
  } catch (err) {
    if (!isCancellation(err) || !ran.seating || !ran.meter || !ran.classified) throw err;
    // Issue 40's change, its old branch retired: where the patch was read, so histories carrying its marker match.
    deprecatePatch('cancel-settles-what-ran');
    const { classified, seating, meter } = ran;
    return CancellationScope.nonCancellable(() =>
      endCancelled(input, { ...classified, seating, meter, panel: ran.panel }, startedMs, emit),
    );
  }
}

/** Settles a cancelled call: what ran, billed; the rest of the hold released; the request and receipt `cancelled`. */
async function endCancelled(
  input: DeliberationInput,
  ran: Required<Omit<Ran, 'classified'>> & NonNullable<Ran['classified']>,
  startedMs: number,
  emit: Emit,
): Promise<Outcome> {
  const outcome = assembleCancelledOutcome({
    requestId: input.requestId,
    orgId: input.orgId,
    form: input.form,
    billed: input.keyMode === 'live',
    mode: input.mode,
    tier: input.tier,
    classification: ran.classification,
    lane: ran.lane,
    ceilingMicros: input.ceilingMicros,
    onPlan: input.payer !== undefined,
    passes: ran.panel.passes,
    judge: ran.panel.judge,
    seats: ran.seating.seats.length,
    classifierCall: ran.call,
    meter: ran.meter,
    createdAt: input.createdAt,
    startedMs,
    completedMs: Date.now(),
  });
  await settleOutcome(input, outcome, abandoning(input, emit));
  emit({ type: 'ended' });
  upsertSearchAttributes([{ key: QuorumStatus, value: 'cancelled' }]);
  return outcome;
}

async function deliberate(input: DeliberationInput, startedMs: number, ran: Ran, emit: Emit): Promise<Outcome> {
  const { orgId, requestId, mode, tier, payer } = input;
  const step = trackProgress();
  const ending = abandoning(input, emit);

  const { classification, lane, call } = await classifyCall(input);
  emit({ type: 'classified', lane, depth: classification.depth });
  const seating = await holdAndSeat(input, lane, ending);
  step({ stage: 'seats', round: 1, seats: seating.seats.length, seatsAnswered: 0 });

  const meter = costMeterFor(input, classification, lane);
  // Issue 38: the classifier model's tokens are the call's too (spec 01), billed on the service's keys.
  if (call) {
    deprecatePatch('classifier-call-billed');
    meter.charge({
      costMicros: call.realCostMicros,
      source: 'service',
      tokensIn: call.tokensIn,
      tokensOut: call.tokensOut,
      reasoningTokens: call.reasoningTokens,
    });
  }
  Object.assign(ran, { classified: { classification, lane, call }, seating, meter });
  const judgeSeed = Math.floor(Math.random() * 2 ** 31);
  // Issue 31: the engine calls run inside the workflow's task (its old branch, activities, retired).
  deprecatePatch('engine-calls-in-workflow-task');
  const panel = await runPanel({
    orgId,
    messages: input.messages,
    promptTokens: input.promptTokens,
    config: mode.config,
    lane,
    seating,
    ground: classification.grounding && mode.config.grounding === 'auto',
    meter,
    judgeSeed,
    onStep: step,
    onEvent: emit,
    answerStream: emit.answerStream,
    localCalls: true,
    record: ran.panel,
    answer: input.answer,
    ...(input.answer?.answerKind && { answerKind: input.answer.answerKind }),
  });
  if (panel.best === null) {
    // Seats and short reasons only: the receipt-less caller reads this; the detail is in the worker's log.
    return ending.abandon('mode_unavailable', unavailableMessage(panel.seats.filter((s) => !s.latest)));
  }
  await checkFormat(input, panel.answer, ending);

  const outcome = assembleOutcome({
    requestId,
    orgId,
    form: input.form,
    billed: input.keyMode === 'live',
    mode,
    tier,
    classification,
    lane,
    ceilingMicros: input.ceilingMicros,
    onPlan: payer !== undefined,
    panel,
    classifierCall: call,
    meter,
    createdAt: input.createdAt,
    startedMs,
    completedMs: Date.now(),
  });
  step({ stage: 'settling' });
  await settleOutcome(input, outcome, ending);
  step({ stage: 'done' });
  emit({ type: 'ended' });
  markDone(outcome, lane, judgeSeed);
  return outcome;
}
