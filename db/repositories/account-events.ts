import { randomBytes } from 'node:crypto';
import type { AccountEventBody, AccountEventState, AccountEventType } from '../../domain/account-events';
import { microsToUsd } from '../../domain/money';
import type { DbOrTrx } from './shared';

/**
 * Account events (issue 41 item 4, domain/account-events.ts): an outbox. Raising one inserts its row, once per
 * organisation and dedupe key, in the caller's transaction when it has one; the worker's dispatcher
 * (worker/account-events.ts) starts one delivery workflow per row, which signs and POSTs the stored body and records
 * each attempt here.
 */

function newEventId(): string {
  return `evt_${randomBytes(12).toString('hex')}`;
}

function eventBody(id: string, orgId: string, type: AccountEventType, data: AccountEventBody['data']): string {
  const body: AccountEventBody = { id, object: 'event', type, created: Math.floor(Date.now() / 1000), organization: orgId, data };
  return JSON.stringify(body);
}

/**
 * The one way to raise an account event: its id when this raised it, undefined when the organisation already had one
 * under `dedupeKey` (that one stands, with its own id). E.g. a key's budget reached this month:
 * `raiseAccountEvent(trx, { orgId, type: 'key.budget_reached', dedupeKey: `key.budget_reached:${keyId}:${month}`, data })`.
 */
export async function raiseAccountEvent(
  db: DbOrTrx,
  input: { orgId: string; type: AccountEventType; dedupeKey: string; data: AccountEventBody['data'] },
): Promise<string | undefined> {
  const id = newEventId();
  const rows = (await db('account_events')
    .insert({
      id,
      org_id: input.orgId,
      type: input.type,
      dedupe_key: input.dedupeKey,
      body: eventBody(id, input.orgId, input.type, input.data),
    })
    .onConflict(['org_id', 'dedupe_key'])
    .ignore()
    .returning('id')) as { id: string }[];
  return rows[0]?.id;
}

/**
 * `balance.low`, raised by the charge that took the balance below the threshold (db/repositories/ledger.ts, under the
 * balance row's lock): the row's flag is set in the same statement, so one fall raises one event; the flag clears
 * when the balance is back at or above the threshold. Keyed by the charge's request, which settles once.
 */
export async function raiseLowBalance(
  db: DbOrTrx,
  input: { orgId: string; requestId: string; balanceMicros: bigint; thresholdMicros: bigint },
): Promise<void> {
  const id = newEventId();
  const body = eventBody(id, input.orgId, 'balance.low', {
    balance_usd: microsToUsd(input.balanceMicros),
    threshold_usd: microsToUsd(input.thresholdMicros),
  });
  await db.raw(
    `with flagged as (update balances set low_alerted = true where org_id = :orgId and not low_alerted returning org_id)
     insert into account_events (id, org_id, type, dedupe_key, body)
     select :id, :orgId, 'balance.low', :key, :body from flagged
     on conflict (org_id, dedupe_key) do nothing`,
    { orgId: input.orgId, id, key: `balance.low:${input.requestId}`, body },
  );
}

/**
 * Events no delivery workflow was started for yet, oldest first. Those of an organisation with no webhook URL are
 * marked `no_endpoint` instead (nowhere to send them; the console lists them).
 */
export async function undispatchedEvents(db: DbOrTrx, limit: number): Promise<{ id: string; orgId: string }[]> {
  await db.raw(
    `update account_events e set state = 'no_endpoint', dispatched_at = now(), ended_at = now()
       from organisations o where o.id = e.org_id and e.dispatched_at is null and o.webhook_url is null`,
  );
  const rows = (await db('account_events').whereNull('dispatched_at').orderBy('created_at').limit(limit).select('id', 'org_id')) as {
    id: string;
    org_id: string;
  }[];
  return rows.map((r) => ({ id: r.id, orgId: r.org_id }));
}

export async function markDispatched(db: DbOrTrx, id: string): Promise<void> {
  await db('account_events').where({ id }).whereNull('dispatched_at').update({ dispatched_at: db.fn.now() });
}

/** What a delivery attempt sends: the stored body (the same bytes every time) to the organisation's URL as it is now. */
export async function eventForDelivery(
  db: DbOrTrx,
  id: string,
): Promise<{ orgId: string; body: string; url: string | null; state: AccountEventState } | undefined> {
  const row = (await db('account_events as e')
    .join('organisations as o', 'o.id', 'e.org_id')
    .where('e.id', id)
    .first('e.org_id', 'e.body', 'o.webhook_url', 'e.state')) as
    { org_id: string; body: string; webhook_url: string | null; state: AccountEventState } | undefined;
  return row && { orgId: row.org_id, body: row.body, url: row.webhook_url, state: row.state };
}

/** One attempt's result: `pending` while retries remain, or the end state. */
export async function recordAttempt(
  db: DbOrTrx,
  id: string,
  attempt: { state: AccountEventState; status?: number; error?: string; counted: boolean },
): Promise<void> {
  const ended = attempt.state !== 'pending';
  await db('account_events')
    .where({ id })
    .update({
      state: attempt.state,
      ...(attempt.counted && { attempts: db.raw('attempts + 1') }),
      ...(attempt.status !== undefined && { last_status: attempt.status }),
      last_error: attempt.error ?? null,
      ...(ended && { ended_at: db.fn.now() }),
    });
}

export interface AccountEventLine {
  id: string;
  type: AccountEventType;
  createdAt: Date;
  state: AccountEventState;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  body: AccountEventBody;
}

/** The organisation's latest events, newest first, with their delivery. */
export async function recentAccountEvents(db: DbOrTrx, orgId: string, limit = 50): Promise<AccountEventLine[]> {
  const rows = (await db('account_events')
    .where({ org_id: orgId })
    .orderBy('created_at', 'desc')
    .limit(limit)
    .select('id', 'type', 'created_at', 'state', 'attempts', 'last_status', 'last_error', 'body')) as {
    id: string;
    type: AccountEventType;
    created_at: Date;
    state: AccountEventState;
    attempts: number;
    last_status: number | null;
    last_error: string | null;
    body: string;
  }[];
  return rows.map((r) => ({
    id: r.id,
    type: r.type,
    createdAt: r.created_at,
    state: r.state,
    attempts: r.attempts,
    lastStatus: r.last_status,
    lastError: r.last_error,
    body: JSON.parse(r.body) as AccountEventBody,
  }));
}

/**
 * Trials ending within the longest alert lead time, not yet expired: what the upkeep raises `trial.expiring` for.
 * `periodMs` is the trial's length (domain/trial.ts).
 */
export async function trialsEndingWithin(
  db: DbOrTrx,
  input: { withinMs: number; periodMs: number },
): Promise<{ orgId: string; endsAt: Date; creditMicros: bigint }[]> {
  const rows = (await db('organisations')
    .whereNull('trial_expired_at')
    .where('trial_credit_micros', '>', 0)
    .whereRaw("trial_started_at + (? * interval '1 millisecond') <= now() + (? * interval '1 millisecond')", [
      input.periodMs,
      input.withinMs,
    ])
    .whereRaw("trial_started_at + (? * interval '1 millisecond') > now()", [input.periodMs])
    .select('id', 'trial_started_at', 'trial_credit_micros')) as { id: string; trial_started_at: Date; trial_credit_micros: bigint }[];
  return rows.map((r) => ({
    orgId: r.id,
    endsAt: new Date(r.trial_started_at.getTime() + input.periodMs),
    creditMicros: r.trial_credit_micros,
  }));
}
