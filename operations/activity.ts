import { insertActivity, listActivity, type ActivityRecord } from '../db/repositories/activity';
import type { DbOrTrx } from '../db/repositories/shared';
import { isActivityKind, type ActivityChange, type ActivityKind } from '../domain/activity';
import { QuorumError } from '../domain/errors';
import type { StoreDeps } from './deps';
import { actorOf, orgActedOn, type KeyPrincipal, type Principal } from './principal';
import { invalidParam, pageLimit, singleParam, type PageSize } from './query-params';

/**
 * The activity log (issue 41 item 6): every change to an account is recorded with who made it, when, from where and
 * what changed, in the change's own transaction where the change is in Postgres; never a secret.
 */

/**
 * Records one change of `orgId` by `principal`. Pass the change's transaction (`db` may be one) so that the record and
 * the change commit together; `detail` says what changed and must never hold a secret.
 */
export async function recordActivity(db: DbOrTrx, orgId: string, principal: Principal, change: ActivityChange): Promise<void> {
  await insertActivity(db, orgId, actorOf(principal), change);
}

/** Only an admin key reads and manages the organisation over the API (403 `insufficient_scope` for any other). */
export function requireAdminKey(auth: KeyPrincipal): void {
  if (auth.keyKind !== 'admin')
    throw new QuorumError(
      'insufficient_scope',
      "This route needs an admin key (qrm_admin_…); the organisation's owner creates one in the console, under API keys.",
    );
}

/** Whoever may read the log: a key must be an admin key; a person reads their organisation's, the operator any. */
function readerOrg(principal: Principal, orgId?: string): string {
  if (principal.via === 'key') requireAdminKey(principal);
  return orgActedOn(principal, orgId);
}

export const ACTIVITY_PAGE: PageSize = { default: 50, max: 200 };

export interface ActivityQuery {
  limit: number;
  /** The last record id of the page before (`act_<n>`). */
  after?: bigint;
  kinds?: ActivityKind[];
  since?: Date;
  until?: Date;
}

const CURSOR = /^act_([1-9]\d{0,17})$/;

/** An instant as unix seconds (OpenAI's usage APIs' `start_time`) or ISO 8601. */
function instantParam(query: Readonly<Record<string, unknown>>, param: string): Date | undefined {
  const raw = singleParam(query, param);
  if (raw === undefined) return undefined;
  const date = /^\d{1,12}$/.test(raw) ? new Date(Number(raw) * 1000) : /^\d{4}-\d{2}-\d{2}/.test(raw) ? new Date(raw) : undefined;
  if (date === undefined || Number.isNaN(date.getTime()))
    throw invalidParam(param, `\`${param}\` is an instant: unix seconds or ISO 8601 (2026-11-27T10:00:00Z).`);
  return date;
}

/** `GET /v1/organization/activity`'s query: `limit`, `after`, `kind` (comma-separated), `since`, `until`. */
export function parseActivityQuery(query: Readonly<Record<string, unknown>>): ActivityQuery {
  const limit = pageLimit(singleParam(query, 'limit'), ACTIVITY_PAGE);
  const afterText = singleParam(query, 'after');
  const cursor = afterText === undefined ? undefined : CURSOR.exec(afterText);
  if (cursor === null) throw invalidParam('after', '`after` is a record id (`act_…`): the `last_id` of the page before.');
  const kindText = singleParam(query, 'kind');
  const kinds = kindText?.split(',');
  const unknown = kinds?.find((k) => !isActivityKind(k));
  if (unknown !== undefined)
    throw invalidParam('kind', `\`kind\` takes kinds of change separated by commas; \`${unknown.slice(0, 60)}\` is none.`);
  const since = instantParam(query, 'since');
  const until = instantParam(query, 'until');
  if (since && until && since >= until) throw invalidParam('until', '`until` must be after `since`.');
  return { limit, after: cursor && BigInt(cursor[1]), kinds: kinds as ActivityKind[] | undefined, since, until };
}

export interface ActivityPage {
  records: ActivityRecord[];
  hasMore: boolean;
}

/** A page of the organisation's activity, newest first. */
export async function activityOf(deps: StoreDeps, principal: Principal, query: ActivityQuery, orgId?: string): Promise<ActivityPage> {
  const org = readerOrg(principal, orgId);
  const rows = await listActivity(deps.db, org, query.limit + 1, {
    kinds: query.kinds,
    since: query.since,
    until: query.until,
    before: query.after,
  });
  return { records: rows.slice(0, query.limit), hasMore: rows.length > query.limit };
}
