import type Router from '@koa/router';
import type { Context } from 'koa';
import type { ActivityRecord } from '../../db/repositories/activity';
import type { KeyListing, KeySpend } from '../../db/repositories/api-keys';
import { microsToUsd } from '../../domain/money';
import { activityOf, parseActivityQuery, type KeyCaller } from '../../operations/activity';
import { monthStartUtc } from '../../domain/api-keys';
import { issueKey, keyOf, keysOf, revokeKey, setBudget } from '../../operations/api-keys';
import { parseKeyBudget, parseNewKey } from '../../operations/requests/organization';
import { ADMIN_SCOPE } from '../http/access';
import { readJsonObject } from '../http/body';
import type { RouteDeps } from '../http/context';
import { authOf, gate } from '../http/gate';
import type { JsonObject } from '../forms/json';

/**
 * The organisation managed from code with an admin key (issue 41 items 3 and 6): its keys
 * (`/v1/organization/keys`) and its activity log (`/v1/organization/activity`). Any other key is 403
 * `insufficient_scope` at the gate.
 */

const unix = (d: Date): number => Math.floor(d.getTime() / 1000);
const unixOrNull = (d: Date | null): number | null => (d === null ? null : unix(d));

/** The calling admin key, with the client's address, as the operations' actor. */
function callerOf(ctx: Context): KeyCaller {
  return { via: 'key', auth: authOf(ctx), edge: 'api', ip: ctx.ip || null };
}

function keyStatus(k: KeyListing): 'active' | 'revoked' | 'expired' {
  if (k.revokedAt) return 'revoked';
  return k.expiresAt && k.expiresAt.getTime() <= Date.now() ? 'expired' : 'active';
}

/** A key as the API shows it: never its secret, only the prefix and last four characters. */
export function keyJson(k: KeyListing): JsonObject {
  return {
    object: 'organization.key',
    id: k.id,
    label: k.label,
    kind: k.keyKind,
    redacted_value: k.display,
    scopes: k.scopes,
    modes: k.allowedModes,
    monthly_budget_usd: k.monthlyBudgetMicros === null ? null : microsToUsd(k.monthlyBudgetMicros),
    requests_per_minute: k.requestsPerMinute,
    owner: k.isOwner,
    status: keyStatus(k),
    created_at: unix(k.createdAt),
    expires_at: unixOrNull(k.expiresAt),
    revoked_at: unixOrNull(k.revokedAt),
  };
}

function spendJson(s: KeySpend): JsonObject {
  return { month_start: unix(monthStartUtc()), spent_usd: microsToUsd(s.spentMicros), held_usd: microsToUsd(s.heldMicros) };
}

function activityJson(r: ActivityRecord): JsonObject {
  return {
    object: 'organization.activity',
    id: r.id,
    kind: r.kind,
    at: unix(r.at),
    actor: { type: r.actor.kind, id: r.actor.id, edge: r.actor.edge, ip: r.actor.ip },
    subject: r.subject,
    detail: r.detail as JsonObject,
  };
}

const keyIdOf = (ctx: Context): string => String((ctx.params as Record<string, string | undefined>).key_id ?? '');

/** The routes, each behind the gate's admin check. */
export function organizationRoutes(router: Router, deps: RouteDeps): void {
  const admin = gate(deps, ADMIN_SCOPE);
  router.post('/v1/organization/keys', admin, async (ctx) => {
    const input = parseNewKey(await readJsonObject(ctx));
    const { apiKey, key } = await issueKey(deps, callerOf(ctx), input);
    // Shown once: this response is the only place the key exists in the clear.
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { ...keyJson(key), secret: apiKey };
  });
  router.get('/v1/organization/keys', admin, async (ctx) => {
    const data = (await keysOf(deps, callerOf(ctx))).map(keyJson);
    ctx.body = { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: false };
  });
  router.get('/v1/organization/keys/:key_id', admin, async (ctx) => {
    const { key, spend } = await keyOf(deps, callerOf(ctx), keyIdOf(ctx));
    ctx.body = { ...keyJson(key), spend: spendJson(spend) };
  });
  router.post('/v1/organization/keys/:key_id', admin, async (ctx) => {
    const budget = parseKeyBudget(await readJsonObject(ctx));
    ctx.body = keyJson(await setBudget(deps, callerOf(ctx), keyIdOf(ctx), budget));
  });
  router.delete('/v1/organization/keys/:key_id', admin, async (ctx) => {
    const key = await revokeKey(deps, callerOf(ctx), keyIdOf(ctx));
    ctx.body = { object: 'organization.key.deleted', id: key.id, deleted: true, revoked_at: unixOrNull(key.revokedAt) };
  });
  router.get('/v1/organization/activity', admin, async (ctx) => {
    const page = await activityOf(deps, callerOf(ctx), parseActivityQuery(ctx.query));
    const data = page.records.map(activityJson);
    ctx.body = { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: page.hasMore };
  });
}
