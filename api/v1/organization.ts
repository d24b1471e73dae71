import type Router from '@koa/router';
import type { Context } from 'koa';
import type { ActivityRecord } from '../../db/repositories/activity';
import type { KeyListing, KeySpend } from '../../db/repositories/api-keys';
import { microsToUsd } from '../../domain/money';
import { activityOf, parseActivityQuery } from '../../operations/activity';
import { monthStartUtc } from '../../domain/api-keys';
import { issueKey, keyOf, keysOf, revokeKey, setBudget } from '../../operations/api-keys';
import { parseAlertsChange, parseKeyBudget, parseNewKey, parseRetentionChange } from '../../operations/requests/organization';
import { accountEventsOf, accountSettingsOf, changeAccountSettings, type AccountSettingsView } from '../../operations/account-settings';
import type { AccountEventLine } from '../../db/repositories/account-events';
import { DEFAULT_RETENTION_DAYS, MAX_RETENTION_DAYS } from '../../domain/retention';
import type { RunSettings } from '../../operations/run-settings';
import { ADMIN_SCOPE } from '../http/access';
import { readJsonObject } from '../http/body';
import type { RouteDeps } from '../http/context';
import { authOf, gate } from '../http/gate';
import type { JsonObject } from '../forms/json';

/**
 * The organisation managed from code with an admin key (issue 41 items 3 and 6, issue 53 item 5): its keys
 * (`/v1/organization/keys`), its activity log (`/v1/organization/activity`), its alerts
 * (`/v1/organization/alerts`, with the account events raised) and its transcript retention
 * (`/v1/organization/retention`). Any other key is 403 `insufficient_scope` at the gate.
 */

const unix = (d: Date): number => Math.floor(d.getTime() / 1000);
const unixOrNull = (d: Date | null): number | null => (d === null ? null : unix(d));

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

/** The alert settings as the API shows them: the console's Alerts page's first two fields. */
function alertsJson(v: AccountSettingsView): JsonObject {
  return { object: 'organization.alerts', webhook_url: v.webhookUrl, balance_low_usd: microsToUsd(v.lowBalanceMicros) };
}

/** The transcript retention: as set (null: the default), what applies, and the bounds. */
function retentionJson(v: AccountSettingsView): JsonObject {
  return {
    object: 'organization.retention',
    transcript_retention_days: v.retentionDays,
    effective_days: v.effectiveRetentionDays,
    default_days: DEFAULT_RETENTION_DAYS,
    max_days: MAX_RETENTION_DAYS,
  };
}

function accountEventJson(e: AccountEventLine): JsonObject {
  return {
    object: 'organization.account_event',
    id: e.id,
    type: e.type,
    created_at: unix(e.createdAt),
    delivery: e.state,
    attempts: e.attempts,
    last_status: e.lastStatus,
    last_error: e.lastError,
  };
}

/** The routes, each behind the gate's admin check. */
export function organizationRoutes(router: Router, deps: RouteDeps & { runs: RunSettings }): void {
  const admin = gate(deps, ADMIN_SCOPE);
  router.post('/v1/organization/keys', admin, async (ctx) => {
    const input = parseNewKey(await readJsonObject(ctx));
    const { apiKey, key } = await issueKey(deps, authOf(ctx), input);
    // Shown once: this response is the only place the key exists in the clear.
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { ...keyJson(key), secret: apiKey };
  });
  router.get('/v1/organization/keys', admin, async (ctx) => {
    const data = (await keysOf(deps, authOf(ctx))).map(keyJson);
    ctx.body = { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: false };
  });
  router.get('/v1/organization/keys/:key_id', admin, async (ctx) => {
    const { key, spend } = await keyOf(deps, authOf(ctx), keyIdOf(ctx));
    ctx.body = { ...keyJson(key), spend: spendJson(spend) };
  });
  router.post('/v1/organization/keys/:key_id', admin, async (ctx) => {
    const budget = parseKeyBudget(await readJsonObject(ctx));
    ctx.body = keyJson(await setBudget(deps, authOf(ctx), keyIdOf(ctx), budget));
  });
  router.delete('/v1/organization/keys/:key_id', admin, async (ctx) => {
    const key = await revokeKey(deps, authOf(ctx), keyIdOf(ctx));
    ctx.body = { object: 'organization.key.deleted', id: key.id, deleted: true, revoked_at: unixOrNull(key.revokedAt) };
  });
  // Issue 53 item 5: the console's Alerts page over the API, through the same operations (operations/account-settings.ts).
  const settingsDeps = { ...deps, publicCallbacksOnly: deps.runs.publicCallbacksOnly };
  router.get('/v1/organization/alerts', admin, async (ctx) => {
    ctx.body = alertsJson(await accountSettingsOf(deps, authOf(ctx)));
  });
  router.post('/v1/organization/alerts', admin, async (ctx) => {
    const change = parseAlertsChange(await readJsonObject(ctx));
    ctx.body = alertsJson(await changeAccountSettings(settingsDeps, authOf(ctx), change));
  });
  router.get('/v1/organization/alerts/events', admin, async (ctx) => {
    const data = (await accountEventsOf(deps, authOf(ctx))).map(accountEventJson);
    ctx.body = { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: false };
  });
  router.get('/v1/organization/retention', admin, async (ctx) => {
    ctx.body = retentionJson(await accountSettingsOf(deps, authOf(ctx)));
  });
  router.post('/v1/organization/retention', admin, async (ctx) => {
    const retentionDays = parseRetentionChange(await readJsonObject(ctx));
    ctx.body = retentionJson(await changeAccountSettings(settingsDeps, authOf(ctx), { retentionDays }));
  });
  router.get('/v1/organization/activity', admin, async (ctx) => {
    const page = await activityOf(deps, authOf(ctx), parseActivityQuery(ctx.query));
    const data = page.records.map(activityJson);
    ctx.body = { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: page.hasMore };
  });
}
