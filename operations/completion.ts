import type { KeyPrincipal } from './principal';
import { findRequestByKey } from '../db/repositories/requests';
import { canonicalHash } from '../domain/canonical-json';
import { quote } from '../domain/estimate';
import { classifyHeuristic } from '../domain/classifier';
import { QuorumError } from '../domain/errors';
import type { ChatMessage } from '../domain/messages';
import { TIERS, type ModeRecord, type Tier } from '../domain/modes';
import { microsToDecimal, usdToMicrosAtMost } from '../domain/money';
import type { Outcome } from '../domain/outcome';
import { assertPlanPermits, type PlanPayer } from '../domain/plan-rules';
import type { CompletionInput } from './requests/common';
import { callingKeyKind, checkInputTokens, resolveMode, withConcurrencySlot, withPersonSlot } from './checks';
import type { OperationDeps } from './deps';
import {
  callerCeilingMicros,
  callQuoteInput,
  catalogPrices,
  classifierPromptTokens,
  ownKeyFamilies,
  planHoldMicros,
  ratesOf,
} from './estimate';
import { conductDeliberation } from './deliberation';
import { capCreditToday } from './ledger';
import { checkKeyBudget, keyBudgetOf } from './api-keys';

/** Far above any real ceiling; keeps the conversion of an absurd `max_cost_usd` exact. */
const MAX_REQUESTED_USD = 1_000_000;

/** `svc.max_cost_usd` → micro-dollars, exactly, at least one (it only ever lowers the ceiling). */
function requestedCeilingMicros(usd: number | undefined): number | undefined {
  return usd === undefined ? undefined : Number(usdToMicrosAtMost(Math.min(usd, MAX_REQUESTED_USD)));
}

/**
 * Spec: without the header, an identical repeat is deduplicated. Identical means the same organisation, key, model,
 * messages, tier and per-call overrides: the same messages asked again at another tier are another call.
 */
export function derivedIdempotencyKey(orgId: string, apiKeyId: string, body: CompletionInput): string {
  const { model, messages, tier = 'plus', svc = null, options } = body;
  // OpenAI's options make another call (issue 40); without them the key is the one it always was.
  return `derived-${canonicalHash({ orgId, apiKeyId, model, messages, tier, svc, ...(options && { options }) })}`;
}

/**
 * A mode whose seats set their own temperature or seed (SeatTuning) refuses a caller's: its seats differ on purpose,
 * and one value for all would make it another panel (docs/api-extensions.md). Other modes take the caller's values.
 */
function assertSamplingFits(mode: ModeRecord, options: CompletionInput['options']): void {
  const sampling = options?.answer?.sampling;
  if (!sampling) return;
  const tunings = TIERS.flatMap((t) => mode.config.tiers[t]?.tunings ?? []);
  for (const [field, param] of [
    ['temperature', 'temperature'],
    ['seed', 'seed'],
  ] as const) {
    if (sampling[field] !== undefined && tunings.some((t) => t?.[field] !== undefined))
      throw new QuorumError(
        'unsupported_parameter',
        `\`${param}\` is not accepted by this mode: its seats set their own ${param}, so they answer differently on purpose.`,
        { param },
      );
  }
}

/**
 * Spec 01: any positive `svc.max_cost_usd` is a ceiling, and Form B runs in full and credits back the excess. What
 * that can cost the service is bounded per organisation and UTC day (QUORUM_CAP_CREDIT_DAILY_USD): a live call whose
 * ceiling is below its quote is admitted while the cap credit received today plus the credit its quote projects stay
 * within the limit, else refused before it runs (402 `cap_credit_limit_reached`), naming the least ceiling accepted.
 * The quote is /v1/estimate's with the heuristic classifier (no model call before admission).
 */
async function checkCapCreditLimit(
  deps: OperationDeps,
  auth: KeyPrincipal,
  call: { mode: ModeRecord; tier: Tier; messages: ChatMessage[]; promptTokens: number; requested: number },
): Promise<void> {
  if (auth.keyKind !== 'live') return;
  const [rates, ownFamilies] = await Promise.all([ratesOf(deps.db, call.mode), ownKeyFamilies(deps.db, auth)]);
  const q = quote(
    {
      ...callQuoteInput(deps, auth, {
        ...call,
        classification: classifyHeuristic(call.messages),
        rates,
        ownFamilies,
        classifierPromptTokens: classifierPromptTokens(call.mode, call.messages),
      }),
      requestedCeilingMicros: call.requested,
    },
    catalogPrices(deps.engines),
  );
  if (q === undefined || call.requested >= q.grossMicros) return;
  const { receivedMicros: received, limitMicros: limit } = await capCreditToday(deps, auth.orgId);
  if (received + BigInt(q.capCreditMicros) <= limit) return;
  const usd = (micros: bigint | number): string => microsToDecimal(BigInt(micros));
  throw new QuorumError(
    'cap_credit_limit_reached',
    `\`svc.max_cost_usd\` ${usd(call.requested)} is below this call's quote, ${usd(q.grossMicros)} USD, and the ${usd(q.capCreditMicros)} USD it would credit back would take this organisation's cap credit today (UTC) past its daily limit of ${usd(limit)} USD (${usd(received)} USD received so far). Set \`svc.max_cost_usd\` to at least ${usd(q.grossMicros)} or leave it out; nothing was charged.`,
    { param: 'svc.max_cost_usd' },
  );
}

/**
 * A chat completion, after the body was read: model and entitlement (404/403; a connected app's plan, 403
 * `tier_not_permitted`) → input tokens (413) → idempotency (409 / replay / 422, in conductDeliberation) → concurrency
 * (429; a connected app's person too, `too_many_concurrent_requests`) → the day's cap credit (402
 * `cap_credit_limit_reached`, Form B) → the key's monthly budget (402 `key_budget_exceeded`) → balance (402; a plan's allowance, `plan_limit_reached`) → run.
 */
export async function createCompletion(
  deps: OperationDeps,
  auth: KeyPrincipal,
  input: {
    body: CompletionInput;
    idempotencyKey?: string;
    onStarted?: (requestId: string) => Promise<void>;
    /** false: the caller cannot watch the call's steps (a chat completion), so none are stored. */
    stepEvents?: false;
  },
): Promise<{ outcome: Outcome; replayed: boolean }> {
  const { db, client, form } = deps;
  const { body } = input;
  const mode = await resolveMode(db, form, auth, body.model);
  const tier = body.tier ?? 'plus';
  if (auth.app) assertPlanPermits(auth.app.plan, { mode, model: body.model, tier });
  assertSamplingFits(mode, body.options);
  const promptTokens = checkInputTokens(auth, body.messages);
  // Form A has no per-call ceiling, nor has a call on a plan: the field is ignored there, not read.
  const requested = form === 'B' && !auth.app ? requestedCeilingMicros(body.svc?.max_cost_usd) : undefined;
  const idempotencyKey = input.idempotencyKey ?? derivedIdempotencyKey(auth.orgId, auth.keyId, body);
  const payer: PlanPayer | undefined = auth.app && {
    kind: 'plan',
    personId: auth.app.personId,
    holdMicros: planHoldMicros(deps, { mode, tier, messages: body.messages, promptTokens }),
  };
  const ceilingMicros = callerCeilingMicros(form, auth, mode, requested);
  const keyBudgetMicros = keyBudgetOf(auth);
  // Idempotency comes before concurrency (DESIGN §8): a key that already ran or is running replays or gets 409
  // even when every slot is taken, since it starts nothing new.
  const known = async (): Promise<boolean> => {
    const row = await findRequestByKey(db, auth.orgId, idempotencyKey);
    return row?.state === 'running' || row?.state === 'succeeded';
  };
  const run = async (): Promise<{ outcome: Outcome; replayed: boolean }> => {
    // Beside the balance check: a replay, or a call already running, is answered as before whatever today's credits.
    if (requested !== undefined && !(await known()))
      await checkCapCreditLimit(deps, auth, { mode, tier, messages: body.messages, promptTokens, requested });
    // A key's monthly budget is judged against the call's hold, as the balance is, and likewise spares a replay.
    if (keyBudgetMicros !== undefined && !(await known())) await checkKeyBudget(deps, auth, keyBudgetMicros, ceilingMicros);
    return conductDeliberation(
      { db, client },
      {
        orgId: auth.orgId,
        apiKeyId: auth.keyId,
        keyKind: callingKeyKind(auth),
        idempotencyKey,
        fingerprint: canonicalHash({
          model: body.model,
          messages: body.messages,
          tier,
          max_cost_micros: requested ?? null,
          ...(body.options && { options: body.options }),
        }),
        form,
        mode,
        model: body.model,
        tier,
        messages: body.messages,
        promptTokens,
        ceilingMicros,
        payer,
        keyBudgetMicros,
        onStarted: input.onStarted,
        stepEvents: input.stepEvents,
        options: body.options,
      },
    );
  };
  return withConcurrencySlot(db, auth, () => withPersonSlot(db, auth, run, known), known);
}
