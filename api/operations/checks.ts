import type { Db } from '../../db/knex';
import type { AuthContext } from '../../db/repositories/api-keys';
import { acquireLease, LEASE_TTL_MS, releaseLease, renewLease } from '../../db/repositories/limits';
import { findMode } from '../../db/repositories/modes';
import { keyAllowsMode } from '../../domain/api-keys';
import { QuorumError } from '../../domain/errors';
import type { ModeRecord } from '../../domain/modes';
import type { ChatMessage } from '../../domain/messages';
import { isStorableText } from '../../domain/storable-text';
import { countMessagesTokens } from '../../domain/tokens';
import type { Form } from '../../domain/form';

/** DESIGN §8 after the body: model and entitlement (404/403) → input tokens (413) → … → concurrency (429). */

export const DEFAULT_MAX_INPUT_TOKENS = 8_000;
export const DEFAULT_CONCURRENCY = 5;
/** A slot frees when some call in flight ends; deliberations take tens of seconds (spec p50 28.5 s). */
export const CONCURRENCY_RETRY_AFTER_S = 5;

/** The mode `model` names, if this caller may call it. */
export async function resolveMode(db: Db, form: Form, auth: AuthContext, model: string): Promise<ModeRecord> {
  const notFound = new QuorumError(
    'model_not_found',
    `No mode \`${JSON.stringify(model).slice(1, -1)}\` is available to this organisation.`,
    {
      param: 'model',
    },
  );
  // Text no mode can be named (a NUL, an unpaired surrogate) is not found without asking the database, which refuses it.
  if (!isStorableText(model)) throw notFound;
  const mode = await findMode(db, { orgId: auth.orgId, form, model });
  if (!mode) throw notFound;
  const lab = form === 'B' && model.endsWith(':LAB');
  if (!mode.published && !lab) {
    // Form A has no such code: an unpublished mode is simply not available.
    if (form === 'A') throw notFound;
    throw new QuorumError('mode_not_published', `The mode \`${model}\` is not published; its author can call \`${model}:LAB\`.`, {
      param: 'model',
    });
  }
  if (!keyAllowsMode(auth.allowedModes, mode.id) && !keyAllowsMode(auth.allowedModes, mode.ticker)) {
    throw new QuorumError('insufficient_scope', `This key is limited to other modes than \`${model}\`.`, { param: 'model' });
  }
  return mode;
}

/** The prompt's token count, after refusing one over the key's input limit (413). */
export function checkInputTokens(auth: AuthContext, messages: readonly ChatMessage[]): number {
  const limit = auth.limits.maxInputTokens ?? DEFAULT_MAX_INPUT_TOKENS;
  const tokens = countMessagesTokens(messages);
  if (tokens > limit) {
    throw new QuorumError('context_length_exceeded', `The prompt is over this key's input limit of ${limit} tokens.`, {
      param: 'messages',
    });
  }
  return tokens;
}

/**
 * Runs `work` holding one of the organisation's concurrency slots (429 when none is free, unless `needsNoSlot`
 * says the work starts nothing new). The lease is renewed while the work runs and expires by itself if this
 * process dies, so a crash never leaks a slot.
 */
export async function withConcurrencySlot<T>(
  db: Db,
  auth: AuthContext,
  work: () => Promise<T>,
  needsNoSlot?: () => Promise<boolean>,
): Promise<T> {
  const limit = auth.limits.concurrency ?? DEFAULT_CONCURRENCY;
  const lease = await acquireLease(db, auth.orgId, limit);
  if (!lease) {
    if (needsNoSlot && (await needsNoSlot())) return work();
    throw new QuorumError('concurrency_limit_exceeded', `This organisation already has ${limit} calls in flight.`, {
      retryAfter: CONCURRENCY_RETRY_AFTER_S,
    });
  }
  const renew = setInterval(() => void renewLease(db, lease).catch(() => undefined), LEASE_TTL_MS / 3);
  try {
    return await work();
  } finally {
    clearInterval(renew);
    await releaseLease(db, lease);
  }
}
