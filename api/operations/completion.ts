import type { AuthContext } from '../../db/repositories/api-keys';
import { findRequestByKey } from '../../db/repositories/requests';
import { canonicalHash } from '../../domain/canonical-json';
import { callCeilingMicros } from '../../domain/fees';
import type { Outcome } from '../../domain/outcome';
import { keyCeilingMicros } from '../access';
import type { CompletionInput } from '../schemas/common';
import { checkInputTokens, resolveMode, withConcurrencySlot } from './checks';
import type { OperationDeps } from './deps';
import { runDeliberation } from './run-deliberation';

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
 * A chat completion, after the body was read: model and entitlement (404/403) → input tokens (413) → idempotency
 * (409 / replay / 422, in runDeliberation) → concurrency (429) → balance (402) → run.
 */
export async function createCompletion(
  deps: OperationDeps,
  auth: AuthContext,
  input: { body: CompletionInput; idempotencyKey?: string },
): Promise<{ outcome: Outcome; replayed: boolean }> {
  const { db, client, form } = deps;
  const { body } = input;
  const mode = await resolveMode(db, form, auth, body.model);
  const promptTokens = checkInputTokens(auth, body.messages);
  const tier = body.tier ?? 'plus';
  const requested = requestedCeilingMicros(body.svc?.max_cost_usd);
  const idempotencyKey = input.idempotencyKey ?? derivedIdempotencyKey(auth.orgId, auth.keyId, body);
  const run = () =>
    runDeliberation(
      { db, client },
      {
        orgId: auth.orgId,
        apiKeyId: auth.keyId,
        keyMode: auth.mode,
        idempotencyKey,
        fingerprint: canonicalHash({ model: body.model, messages: body.messages, tier, max_cost_micros: requested ?? null }),
        form,
        mode,
        model: body.model,
        tier,
        messages: body.messages,
        promptTokens,
        ceilingMicros: callCeilingMicros(form, mode.config, keyCeilingMicros(auth), requested),
      },
    );
  // Idempotency comes before concurrency (DESIGN §8): a key that already ran or is running replays or gets 409
  // even when every slot is taken, since it starts nothing new.
  const known = async (): Promise<boolean> => {
    const row = await findRequestByKey(db, auth.orgId, idempotencyKey);
    return row?.state === 'running' || row?.state === 'succeeded';
  };
  return withConcurrencySlot(db, auth, run, known);
}
