import type { AuthContext } from '../db/repositories/api-keys';
import { findRequestByKey } from '../db/repositories/requests';
import { canonicalHash } from '../domain/canonical-json';
import { minimumCallMicros } from '../domain/estimate';
import { classifyHeuristic } from '../domain/classifier';
import { QuorumError } from '../domain/errors';
import type { ChatMessage } from '../domain/messages';
import type { ModeRecord, Tier } from '../domain/modes';
import { microsToDecimal } from '../domain/money';
import type { Outcome } from '../domain/outcome';
import { assertPlanPermits, type PlanPayer } from '../domain/plan-rules';
import type { CompletionInput } from './requests/common';
import { checkInputTokens, resolveMode, withConcurrencySlot, withPersonSlot } from './checks';
import type { OperationDeps } from './deps';
import { callerCeilingMicros, callQuoteInput, catalogPrices, ownKeyFamilies, planHoldMicros, ratesOf } from './estimate';
import { conductDeliberation } from './deliberation';

/** Far above any real ceiling; keeps the conversion of an absurd `max_cost_usd` exact. */
const MAX_REQUESTED_USD = 1_000_000;

/** `svc.max_cost_usd` → micro-dollars, at least one (it only ever lowers the ceiling). */
function requestedCeilingMicros(usd: number | undefined): number | undefined {
  return usd === undefined ? undefined : Math.max(1, Math.floor(Math.min(usd, MAX_REQUESTED_USD) * 1_000_000));
}

/**
 * Spec: without the header, an identical repeat is deduplicated. Identical means the same organisation, key, model,
 * messages, tier and per-call overrides: the same messages asked again at another tier are another call.
 */
export function derivedIdempotencyKey(orgId: string, apiKeyId: string, body: CompletionInput): string {
  const { model, messages, tier = 'plus', svc = null } = body;
  return `derived-${canonicalHash({ orgId, apiKeyId, model, messages, tier, svc })}`;
}

/**
 * A ceiling below the least the call can cost would let a caller run a whole panel for next to nothing (Form B runs
 * in full and credits back the excess), so `svc.max_cost_usd` must be at least that minimum.
 */
async function refuseCeilingBelowQuote(
  deps: OperationDeps,
  auth: AuthContext,
  call: { mode: ModeRecord; tier: Tier; messages: ChatMessage[]; promptTokens: number; requested: number },
): Promise<void> {
  const [rates, ownFamilies] = await Promise.all([ratesOf(deps.db, call.mode), ownKeyFamilies(deps.db, auth)]);
  const minimum = minimumCallMicros(
    callQuoteInput(deps, auth, { ...call, classification: classifyHeuristic(call.messages), rates, ownFamilies }),
    catalogPrices(deps.engines),
  );
  if (minimum !== undefined && call.requested < minimum) {
    throw new QuorumError(
      'invalid_max_cost_usd',
      `\`svc.max_cost_usd\` must be at least this call's minimum cost, ${microsToDecimal(BigInt(minimum))} USD (every seat reading the prompt); it lowers the ceiling, not the price.`,
      { param: 'svc.max_cost_usd' },
    );
  }
}

/**
 * A chat completion, after the body was read: model and entitlement (404/403; a connected app's plan, 403
 * `tier_not_permitted`) → input tokens (413) → idempotency (409 / replay / 422, in conductDeliberation) → concurrency
 * (429; a connected app's person too, `too_many_concurrent_requests`) → balance (402; a plan's allowance,
 * `plan_limit_reached`) → run.
 */
export async function createCompletion(
  deps: OperationDeps,
  auth: AuthContext,
  input: { body: CompletionInput; idempotencyKey?: string },
): Promise<{ outcome: Outcome; replayed: boolean }> {
  const { db, client, form } = deps;
  const { body } = input;
  const mode = await resolveMode(db, form, auth, body.model);
  const tier = body.tier ?? 'plus';
  if (auth.app) assertPlanPermits(auth.app.plan, { mode, model: body.model, tier });
  const promptTokens = checkInputTokens(auth, body.messages);
  // Form A has no per-call ceiling, nor has a call on a plan: the field is ignored there, not read.
  const requested = form === 'B' && !auth.app ? requestedCeilingMicros(body.svc?.max_cost_usd) : undefined;
  if (requested !== undefined) await refuseCeilingBelowQuote(deps, auth, { mode, tier, messages: body.messages, promptTokens, requested });
  const idempotencyKey = input.idempotencyKey ?? derivedIdempotencyKey(auth.orgId, auth.keyId, body);
  const payer: PlanPayer | undefined = auth.app && {
    kind: 'plan',
    personId: auth.app.personId,
    holdMicros: planHoldMicros(deps, { mode, tier, messages: body.messages, promptTokens }),
  };
  const run = () =>
    conductDeliberation(
      { db, client },
      {
        orgId: auth.orgId,
        apiKeyId: auth.keyId,
        keyKind: auth.keyKind,
        idempotencyKey,
        fingerprint: canonicalHash({ model: body.model, messages: body.messages, tier, max_cost_micros: requested ?? null }),
        form,
        mode,
        model: body.model,
        tier,
        messages: body.messages,
        promptTokens,
        ceilingMicros: callerCeilingMicros(form, auth, mode, requested),
        payer,
      },
    );
  // Idempotency comes before concurrency (DESIGN §8): a key that already ran or is running replays or gets 409
  // even when every slot is taken, since it starts nothing new.
  const known = async (): Promise<boolean> => {
    const row = await findRequestByKey(db, auth.orgId, idempotencyKey);
    return row?.state === 'running' || row?.state === 'succeeded';
  };
  return withConcurrencySlot(db, auth, () => withPersonSlot(db, auth, run, known), known);
}
