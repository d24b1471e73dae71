import type { Knex } from 'knex';
import { releaseIn } from './ledger';
import { releasePlanCharge } from './plans';
import type { DbOrTrx } from './shared';

/**
 * Holds left behind by a deliberation whose workflow closed without settling or releasing them (issue 38 item 11: an
 * operator terminated it, or it timed out): their request row still says `running`. A closed workflow never runs its
 * own release, so the worker's sweep (worker/hold-sweep.ts) asks Temporal and releases them here.
 */

/** A hold (on the balance or a plan) of a request still marked running, older than the sweep's bound. */
export interface StaleHold {
  orgId: string;
  requestId: string;
  workflowId: string;
  /** The request was superseded by a later run under its key: its workflow id now names that run's workflow. */
  superseded: boolean;
}

export async function staleHolds(db: DbOrTrx, olderThanMs: number, limit = 500): Promise<StaleHold[]> {
  // From the holds (few, and indexed while held: migration 022) to their requests by primary key.
  const { rows } = await db.raw<{ rows: { org_id: string; request_id: string; workflow_id: string; superseded: boolean }[] }>(
    `select q.org_id, q.id as request_id, q.workflow_id, q.superseded_at is not null as superseded
       from (select request_id from reservations where state = 'held' and created_at < now() - make_interval(secs => :age)
             union
             select request_id from plan_usage where state = 'held' and created_at < now() - make_interval(secs => :age)) h
       join requests q on q.id = h.request_id and q.state = 'running'
      order by q.created_at
      limit :limit`,
    { age: olderThanMs / 1000, limit },
  );
  return rows.map((r) => ({ orgId: r.org_id, requestId: r.request_id, workflowId: r.workflow_id, superseded: r.superseded }));
}

/**
 * The request whose workflow closed without an answer, ended as its workflow's `failRequest` would have: marked failed
 * and its holds released, nothing billed, in one transaction. Exactly once: only a row still `running` is taken (its
 * row lock orders two sweeps), and a hold is released only while held. False when another sweep (or the request's own
 * end) came first.
 */
export async function releaseClosedRequest(db: Knex, hold: Pick<StaleHold, 'orgId' | 'requestId'>): Promise<boolean> {
  return db.transaction(async (trx) => {
    const marked = await trx('requests')
      .where({ id: hold.requestId, state: 'running' })
      .update({ state: 'failed', error_code: 'internal_error', completed_at: trx.fn.now() })
      .returning('id');
    if (marked.length === 0) return false;
    await releaseIn(trx, { orgId: hold.orgId, requestId: hold.requestId });
    await releasePlanCharge(trx, { requestId: hold.requestId });
    return true;
  });
}
