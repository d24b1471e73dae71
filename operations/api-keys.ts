import {
  createApiKey,
  findApiKey,
  keyMonthSpend,
  listApiKeys,
  raiseKeyBudgetReached,
  revokeApiKey,
  setKeyBudget,
  type KeyListing,
  type KeySpend,
} from '../db/repositories/api-keys';
import { fitsKeyBudget, keyBudgetExceeded, monthStartUtc, ORG_REQUESTS_PER_MINUTE } from '../domain/api-keys';
import { QuorumError } from '../domain/errors';
import { microsToUsd } from '../domain/money';
import { recordActivity, requireAdminKey } from './activity';
import { orgActedOn, type KeyPrincipal, type Principal } from './principal';
import type { StoreDeps } from './deps';
import type { NewKey } from './requests/organization';

/**
 * API keys (DESIGN §8; issue 41 item 3): issued shown once (only a hash is stored), listed, revoked, given a budget.
 * The console, the CLI and an admin key over the API (`/v1/organization/keys`) call these same operations; each
 * change is recorded in the activity log in its own transaction.
 */

/** The organisation a caller manages keys of: a key must be an admin key. */
function managedOrg(actor: Principal, orgId?: string): string {
  if (actor.via === 'key') requireAdminKey(actor);
  return orgActedOn(actor, orgId);
}

/** The organisation's keys, newest first (prefix and last four characters only). */
export async function keysOf(deps: StoreDeps, actor: Principal, orgId?: string): Promise<KeyListing[]> {
  return listApiKeys(deps.db, managedOrg(actor, orgId));
}

const noSuchKey = (keyId: string): QuorumError =>
  new QuorumError('not_found', `No key \`${keyId.slice(0, 60)}\` in this organisation.`, { param: 'key_id' });

/** One key of the organisation with what its calls of this month (UTC) cost; another organisation's is 404. */
export async function keyOf(deps: StoreDeps, actor: Principal, keyId: string): Promise<{ key: KeyListing; spend: KeySpend }> {
  const orgId = managedOrg(actor);
  const key = await findApiKey(deps.db, orgId, keyId);
  if (!key) throw noSuchKey(keyId);
  return { key, spend: await keyMonthSpend(deps.db, { orgId, keyId, month: monthStartUtc() }) };
}

/** Refuses what a key may not be given, each naming its field. */
function checkNewKey(actor: Principal, input: NewKey): void {
  if (input.keyKind === 'admin') {
    if (actor.via === 'key')
      throw new QuorumError('invalid_request', 'An admin key is created by the organisation owner in the console, not over the API.', {
        param: 'kind',
      });
    if (actor.via !== 'person' || actor.role !== 'owner')
      throw new QuorumError('forbidden', "Only the organisation's owner creates an admin key, in the console.");
  }
  if (input.requestsPerMinute !== undefined && input.requestsPerMinute >= ORG_REQUESTS_PER_MINUTE)
    throw new QuorumError(
      'invalid_request',
      `\`requests_per_minute\` must be below the organisation's ${ORG_REQUESTS_PER_MINUTE}; leave it out to have the organisation's.`,
      { param: 'requests_per_minute' },
    );
  if (input.expiresAt !== undefined && input.expiresAt.getTime() <= Date.now())
    throw new QuorumError('invalid_request', '`expires_at` must be in the future (unix seconds).', { param: 'expires_at' });
}

const usdOrNull = (micros: bigint | null | undefined): number | null => (micros == null ? null : microsToUsd(micros));

/** A new key of the organisation; the key itself is in the result only, shown once. */
export async function issueKey(
  deps: StoreDeps,
  actor: Principal,
  input: NewKey & { orgId?: string },
): Promise<{ keyId: string; apiKey: string; key: KeyListing }> {
  const orgId = managedOrg(actor, input.orgId);
  checkNewKey(actor, input);
  return deps.db.transaction(async (trx) => {
    const issued = await createApiKey(trx, {
      orgId,
      keyKind: input.keyKind,
      label: input.label ?? null,
      scopes: input.scopes,
      allowedModes: input.allowedModes ?? null,
      expiresAt: input.expiresAt ?? null,
      monthlyBudgetMicros: input.monthlyBudgetMicros ?? null,
      limits: { requestsPerMinute: input.requestsPerMinute ?? null },
    });
    const key = (await findApiKey(trx, orgId, issued.keyId)) as KeyListing;
    await recordActivity(trx, orgId, actor, {
      kind: 'key.created',
      subject: key.id,
      detail: {
        kind: key.keyKind,
        label: key.label,
        display: key.display,
        scopes: key.scopes,
        modes: key.allowedModes,
        monthly_budget_usd: usdOrNull(key.monthlyBudgetMicros),
        requests_per_minute: key.requestsPerMinute,
        expires_at: key.expiresAt?.toISOString() ?? null,
      },
    });
    if (key.monthlyBudgetMicros !== null)
      await recordActivity(trx, orgId, actor, {
        kind: 'key.budget_set',
        subject: key.id,
        detail: { from_usd: null, to_usd: usdOrNull(key.monthlyBudgetMicros) },
      });
    return { ...issued, key };
  });
}

/** Revokes a key: a person or an admin key only one of their organisation's, the operator any. */
export async function revokeKey(deps: StoreDeps, actor: Principal, keyId: string): Promise<KeyListing> {
  const orgId = actor.via === 'operator' ? undefined : managedOrg(actor);
  return deps.db.transaction(async (trx) => {
    const revoked = await revokeApiKey(trx, keyId, orgId).catch((err: unknown) => {
      throw err instanceof QuorumError && err.code === 'not_found' ? noSuchKey(keyId) : err;
    });
    const key = (await findApiKey(trx, revoked.orgId, keyId)) as KeyListing;
    // Revoking twice keeps the first time, and records the change once.
    if (revoked.now)
      await recordActivity(trx, revoked.orgId, actor, { kind: 'key.revoked', subject: keyId, detail: { display: key.display } });
    return key;
  });
}

/** Sets (or with null clears) a key's monthly budget; recorded as `key.budget_set` from what it was. */
export async function setBudget(deps: StoreDeps, actor: Principal, keyId: string, budgetMicros: bigint | null): Promise<KeyListing> {
  const orgId = managedOrg(actor);
  return deps.db.transaction(async (trx) => {
    const before = await findApiKey(trx, orgId, keyId);
    if (!before) throw noSuchKey(keyId);
    if (before.keyKind === 'admin')
      throw new QuorumError('invalid_request', 'An admin key calls no mode, so it has no budget.', { param: 'key_id' });
    await setKeyBudget(trx, keyId, budgetMicros);
    await recordActivity(trx, orgId, actor, {
      kind: 'key.budget_set',
      subject: keyId,
      detail: { from_usd: usdOrNull(before.monthlyBudgetMicros), to_usd: usdOrNull(budgetMicros) },
    });
    return { ...before, monthlyBudgetMicros: budgetMicros };
  });
}

/** A key's budget this month: what a `key.budget_reached` alert reads (reached: nothing more can be held). */
export interface KeyBudgetState extends KeySpend {
  budgetMicros: bigint;
  reached: boolean;
}

export async function keyBudgetState(
  deps: StoreDeps,
  key: { orgId: string; keyId: string; budgetMicros: bigint },
): Promise<KeyBudgetState> {
  const spend = await keyMonthSpend(deps.db, { orgId: key.orgId, keyId: key.keyId, month: monthStartUtc() });
  return { ...spend, budgetMicros: key.budgetMicros, reached: spend.spentMicros + spend.heldMicros >= key.budgetMicros };
}

/**
 * Refuses a live call whose hold (its ceiling, what the balance check reserves) would take the key past its monthly
 * budget: this month's net charges of the key's calls, plus what its calls in flight hold, plus this call's hold
 * (402 `key_budget_exceeded`, before anything runs); `budget` is `keyBudgetOf`'s. This early refusal spares an
 * over-budget call its request row and workflow; calls made at once may all pass it, so the hold itself is judged again
 * under the key's lock (`holdWithinKeyBudget`), which is what keeps the key within its budget.
 */
export async function checkKeyBudget(deps: StoreDeps, auth: KeyPrincipal, budget: bigint, holdMicros: number | null): Promise<void> {
  const state = await keyBudgetState(deps, { orgId: auth.orgId, keyId: auth.keyId, budgetMicros: budget });
  const hold = BigInt(holdMicros ?? 0);
  if (fitsKeyBudget(state, hold)) return;
  await raiseKeyBudgetReached(deps.db, { orgId: auth.orgId, keyId: auth.keyId, figures: state });
  throw keyBudgetExceeded(state, hold);
}

/** The budget a call's hold is judged against: a live key's own, unless a connected app's plan pays. */
export function keyBudgetOf(auth: KeyPrincipal): bigint | undefined {
  return auth.keyKind === 'live' && !auth.app ? auth.monthlyBudgetMicros : undefined;
}
