import type { Db } from '../db/knex';
import type { KeyPrincipal } from './principal';
import { acquireLease, LEASE_TTL_MS, releaseLease, renewLease } from '../db/repositories/limits';
import { namesLab } from '../db/repositories/modes';
import { keyAllowsMode, type CallingKeyKind, type KeyKind, type Scope } from '../domain/api-keys';
import { QuorumError } from '../domain/errors';
import type { ModeRecord } from '../domain/modes';
import type { ChatMessage } from '../domain/messages';
import { isStorableText } from '../domain/storable-text';
import { countMessagesTokens } from '../domain/tokens';
import type { Form } from '../domain/form';
import { findModeAt } from './mode-cache';

/** DESIGN §8 after the body: model and entitlement (404/403) → input tokens (413) → … → concurrency (429). */

export const DEFAULT_MAX_INPUT_TOKENS = 8_000;
export const DEFAULT_CONCURRENCY = 5;
/** A slot frees when some call in flight ends; deliberations take tens of seconds (spec p50 28.5 s). */
export const CONCURRENCY_RETRY_AFTER_S = 5;

/** The mode `model` names, if this caller may call it. */
export async function resolveMode(db: Db, form: Form, auth: KeyPrincipal, model: string): Promise<ModeRecord> {
  // Made only when thrown: an error's stack trace costs more than the rest of a found mode's checks.
  const notFound = (): QuorumError =>
    new QuorumError('model_not_found', `No mode \`${JSON.stringify(model).slice(1, -1)}\` is available to this organisation.`, {
      param: 'model',
    });
  // Text no mode can be named (a NUL, an unpaired surrogate) is not found without asking the database, which refuses it.
  if (!isStorableText(model)) throw notFound();
  const mode = await findModeAt(db, { orgId: auth.orgId, form, model }, auth.catalogueRevision);
  if (!mode) throw notFound();
  const lab = namesLab(form, model);
  if (!mode.published && !lab) {
    // Form A has no such code: an unpublished mode is simply not available.
    if (form === 'A') throw notFound();
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
export function checkInputTokens(auth: KeyPrincipal, messages: readonly ChatMessage[]): number {
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
 * Runs `work` holding one of `limit` slots of `holder` (429 `refusal` when none is free, unless `needsNoSlot` says the
 * work starts nothing new). The lease is renewed while the work runs and expires by itself if this process dies, so a
 * crash never leaks a slot.
 */
async function withSlot<T>(
  db: Db,
  slot: { holder: string; limit: number; refusal: () => QuorumError },
  work: () => Promise<T>,
  needsNoSlot?: () => Promise<boolean>,
): Promise<T> {
  const lease = await acquireLease(db, slot.holder, slot.limit);
  if (!lease) {
    if (needsNoSlot && (await needsNoSlot())) return work();
    throw slot.refusal();
  }
  return holdingLease(db, lease, work);
}

/** Runs `work` holding `lease`, taken already: renewed while the work runs, released when it ends. */
export async function holdingLease<T>(db: Db, lease: string, work: () => Promise<T>): Promise<T> {
  const renew = setInterval(() => void renewLease(db, lease).catch(() => undefined), LEASE_TTL_MS / 3);
  try {
    return await work();
  } finally {
    clearInterval(renew);
    await releaseLease(db, lease);
  }
}

/** How many calls the organisation may have in flight, and the refusal past them (429 `concurrency_limit_exceeded`). */
export function concurrencySlots(auth: KeyPrincipal): { limit: number; refusal: () => QuorumError } {
  const limit = auth.limits.concurrency ?? DEFAULT_CONCURRENCY;
  const refusal = (): QuorumError =>
    new QuorumError('concurrency_limit_exceeded', `This organisation already has ${limit} calls in flight.`, {
      retryAfter: CONCURRENCY_RETRY_AFTER_S,
    });
  return { limit, refusal };
}

/** `work` holding one of the organisation's concurrency slots (429 `concurrency_limit_exceeded`). */
export function withConcurrencySlot<T>(
  db: Db,
  auth: KeyPrincipal,
  work: () => Promise<T>,
  needsNoSlot?: () => Promise<boolean>,
): Promise<T> {
  return withSlot(db, { holder: auth.orgId, ...concurrencySlots(auth) }, work, needsNoSlot);
}

/**
 * `work` holding one of the person's deliberation slots when a connected app calls on their plan (429
 * `too_many_concurrent_requests`); an API key's call has no person and runs as is. The person's leases sit beside the
 * organisations' under `person:<id>` (concurrency_leases.org_id has no foreign key), so the limit holds across API
 * processes the same way.
 */
export function withPersonSlot<T>(db: Db, auth: KeyPrincipal, work: () => Promise<T>, needsNoSlot?: () => Promise<boolean>): Promise<T> {
  if (!auth.app) return work();
  const { personId, plan } = auth.app;
  const refusal = (): QuorumError =>
    new QuorumError(
      'too_many_concurrent_requests',
      `The ${plan.name} plan allows ${plan.maxInFlight} deliberation(s) in flight per person; retry when one ends.`,
      { retryAfter: CONCURRENCY_RETRY_AFTER_S },
    );
  return withSlot(db, { holder: `person:${personId}`, limit: plan.maxInFlight, refusal }, work, needsNoSlot);
}

/** Each operation checks its own scope (the MCP server admits a call before it knows the tool). */
export function requireScope(auth: { scopes: readonly Scope[] }, scope: Scope): void {
  if (!auth.scopes.includes(scope)) throw new QuorumError('insufficient_scope', `This key lacks the \`${scope}\` scope.`);
}

/** The key's own per-call ceiling in micro-dollars, when the service set one. */
export function keyCeilingMicros(auth: KeyPrincipal): number | undefined {
  return auth.limits.maxCostMicros === null ? undefined : Number(auth.limits.maxCostMicros);
}

/** What an admin key is told where it would call (the gate refuses it first; this keeps the types honest). */
export const ADMIN_KEY_CALLS_NOTHING =
  'An admin key manages the organisation (its keys and activity log) and calls no mode; use a live or test key.';

/** The kind of a key that calls a mode: live or test, never admin. */
export function callingKeyKind(auth: { keyKind: KeyKind }): CallingKeyKind {
  if (auth.keyKind === 'admin') throw new QuorumError('insufficient_scope', ADMIN_KEY_CALLS_NOTHING);
  return auth.keyKind;
}
