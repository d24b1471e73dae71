import type { ActivityActor, ActivityChange, ActivityEdge, ActivityKind } from '../../domain/activity';
import type { DbOrTrx } from './shared';

/** The activity log (migration 029): one row per account change, appended in the change's own transaction. */

export interface ActivityRecord {
  /** `act_<n>`: the row's id, also the listing's cursor. */
  id: string;
  at: Date;
  kind: ActivityKind;
  actor: ActivityActor;
  subject: string | null;
  detail: Record<string, unknown>;
}

/** Appends one change; pass the change's transaction so the record commits or rolls back with it. */
export async function insertActivity(db: DbOrTrx, orgId: string, actor: ActivityActor, change: ActivityChange): Promise<void> {
  await db('activity').insert({
    org_id: orgId,
    kind: change.kind,
    actor_kind: actor.kind,
    actor_id: actor.id,
    edge: actor.edge,
    ip: actor.ip,
    subject: change.subject ?? null,
    detail: JSON.stringify(change.detail ?? {}),
  });
}

export interface ActivityFilter {
  kinds?: readonly ActivityKind[];
  /** Only records at or after / before this instant. */
  since?: Date;
  until?: Date;
  /** Only records older than this one (numeric id of the page before's last record). */
  before?: bigint;
}

interface ActivityRow {
  id: string;
  at: Date;
  kind: ActivityKind;
  actor_kind: ActivityActor['kind'];
  actor_id: string | null;
  edge: ActivityEdge;
  ip: string | null;
  subject: string | null;
  detail: Record<string, unknown>;
}

/** Newest first; the id orders records of the same instant, so a cursor never skips or repeats one. */
export async function listActivity(db: DbOrTrx, orgId: string, limit: number, filter: ActivityFilter = {}): Promise<ActivityRecord[]> {
  const q = db('activity').where({ org_id: orgId });
  if (filter.kinds) q.whereIn('kind', filter.kinds);
  if (filter.since) q.where('at', '>=', filter.since);
  if (filter.until) q.where('at', '<', filter.until);
  if (filter.before !== undefined) q.where('id', '<', filter.before.toString());
  const rows = (await q.orderBy('id', 'desc').limit(limit)) as ActivityRow[];
  return rows.map((r) => ({
    id: `act_${r.id}`,
    at: r.at,
    kind: r.kind,
    actor: { kind: r.actor_kind, id: r.actor_id, edge: r.edge, ip: r.ip },
    subject: r.subject,
    detail: r.detail,
  }));
}
