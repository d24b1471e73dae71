import type { Context } from 'koa';
import { canonicalHash } from '../../domain/canonical-json';
import { derivedIdempotencyKey, runDeliberation } from '../deliberations';
import { findRequestByKey } from '../../db/repositories/requests';
import { QuorumError } from '../../domain/errors';
import { callCeilingMicros } from '../../domain/fees';
import { readJsonObject } from '../body';
import { checkInputTokens, resolveMode, withConcurrencySlot } from '../middleware/checks';
import { authOf } from '../middleware/gate';
import { IdempotencyKeySchema, parseRequest } from '../schemas/common';
import type { RouteDeps } from './context';

/** Far above any real ceiling; keeps the conversion of an absurd `max_cost_usd` exact. */
const MAX_REQUESTED_USD = 1_000_000;

function idempotencyHeader(ctx: Context): string | undefined {
  const raw = ctx.headers['idempotency-key'];
  if (raw === undefined) return undefined;
  const parsed = IdempotencyKeySchema.safeParse(raw);
  if (!parsed.success) throw new QuorumError('invalid_request', `Idempotency-Key must be 1-255 printable ASCII characters without spaces, sent once.`, { param: 'Idempotency-Key' });
  return parsed.data;
}

/** `svc.max_cost_usd` → micro-dollars, at least one (it only ever lowers the ceiling). */
function requestedCeilingMicros(usd: number | undefined): number | undefined {
  return usd === undefined ? undefined : Math.max(1, Math.floor(Math.min(usd, MAX_REQUESTED_USD) * 1_000_000));
}

/**
 * POST /v1/chat/completions, behind the gate: body (400) → model and entitlement (404/403) → input tokens (413)
 * → idempotency (409 / replay / 422, inside runDeliberation) → concurrency (429) → balance (402) → run.
 */
export function completions(deps: RouteDeps) {
  return async (ctx: Context): Promise<void> => {
    const { db, client, serialiser } = deps;
    const auth = authOf(ctx);
    const body = parseRequest(serialiser.requests.completion, await readJsonObject(ctx), { model: serialiser.requests.completionMissingModel });
    const headerKey = idempotencyHeader(ctx);
    const mode = await resolveMode(db, serialiser.form, auth, body.model);
    const promptTokens = checkInputTokens(auth, body.messages);
    const tier = body.tier ?? 'plus';
    const requested = requestedCeilingMicros(body.svc?.max_cost_usd);
    const keyCeiling = auth.limits.maxCostMicros === null ? undefined : Number(auth.limits.maxCostMicros);
    const idempotencyKey = headerKey ?? derivedIdempotencyKey(auth.orgId, auth.keyId, body.model, body.messages);
    const run = () =>
      runDeliberation(
        { db, client },
        {
          orgId: auth.orgId,
          apiKeyId: auth.keyId,
          keyMode: auth.mode,
          idempotencyKey,
          fingerprint: canonicalHash({ model: body.model, messages: body.messages, tier, max_cost_micros: requested ?? null }),
          form: serialiser.form,
          mode,
          model: body.model,
          tier,
          messages: body.messages,
          promptTokens,
          ceilingMicros: callCeilingMicros(serialiser.form, mode.config, keyCeiling, requested),
        },
      );
    // Idempotency comes before concurrency (DESIGN §8): a key that already ran or is running replays or gets 409
    // even when every slot is taken, since it starts nothing new.
    const known = async (): Promise<boolean> => {
      const row = await findRequestByKey(db, auth.orgId, idempotencyKey);
      return row?.state === 'running' || row?.state === 'succeeded';
    };
    const { outcome, replayed } = await withConcurrencySlot(db, auth, run, known);
    ctx.body = serialiser.completion(outcome, replayed);
  };
}
