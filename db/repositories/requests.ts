import type { Knex } from 'knex';
import type { Outcome, Settlement } from '../../domain/outcome';
import { BILLABLE_COLUMNS, release, type BillableRow } from './ledger';
import { releasePlanCharge } from './plans';
import { storableJson } from '../../domain/storable-text';
import { isDeterministicDbError, type DbOrTrx } from './shared';

export type RequestState = 'running' | 'succeeded' | 'failed' | 'capped';

export interface RequestRow {
  id: string;
  org_id: string;
  idempotency_key: string;
  workflow_id: string;
  fingerprint: string;
  state: RequestState;
  error_code: string | null;
  created_at: Date;
}

/** The live request for a key (not one a later run superseded). */
export function findRequestByKey(db: DbOrTrx, orgId: string, idempotencyKey: string): Promise<RequestRow | undefined> {
  return db('requests').where({ org_id: orgId, idempotency_key: idempotencyKey }).whereNull('superseded_at').first() as Promise<
    RequestRow | undefined
  >;
}

/**
 * The live request for a key and, in the same round trip, the organisation's balance row judged for a hold of
 * `holdMicros` (see `assertBillableRow`): a live call's first read. No balance row: no such organisation.
 */
export async function findRequestWithBalance(
  db: DbOrTrx,
  orgId: string,
  idempotencyKey: string,
  holdMicros: bigint,
): Promise<{ request: RequestRow | undefined; balance: BillableRow | undefined }> {
  // Without a live request, its columns are null.
  const { rows } = await db.raw<{ rows: (BillableRow & Omit<RequestRow, 'id'> & { id: string | null })[] }>(
    `select ${BILLABLE_COLUMNS}, r.id, r.org_id, r.idempotency_key, r.workflow_id, r.fingerprint, r.state, r.error_code, r.created_at
       from balances b
       left join requests r on r.org_id = b.org_id and r.idempotency_key = :key and r.superseded_at is null
      where b.org_id = :orgId`,
    { hold: holdMicros.toString(), key: idempotencyKey, orgId },
  );
  if (!rows[0]) return { request: undefined, balance: undefined };
  const { balance_micros, reserved_micros, refusal, id, ...request } = rows[0];
  return { request: id === null ? undefined : { ...request, id }, balance: { balance_micros, reserved_micros, refusal } };
}

export interface ClaimRow {
  id: string;
  orgId: string;
  apiKeyId: string;
  idempotencyKey: string;
  workflowId: string;
  fingerprint: string;
  modeId: string;
  model: string;
}

/** Inserts the key's live row unless one exists (then nothing, and undefined: a concurrent claim won the unique index). */
async function insertClaim(db: DbOrTrx, row: ClaimRow): Promise<RequestRow | undefined> {
  const inserted = (await db('requests')
    .insert({
      id: row.id,
      org_id: row.orgId,
      api_key_id: row.apiKeyId,
      idempotency_key: row.idempotencyKey,
      workflow_id: row.workflowId,
      fingerprint: row.fingerprint,
      mode_id: row.modeId,
      model: row.model,
      state: 'running',
    })
    .onConflict(db.raw('(org_id, idempotency_key) where superseded_at is null'))
    .ignore()
    .returning('*')) as RequestRow[];
  return inserted[0];
}

/**
 * Claims an idempotency key for a new run: inserts its row, or supersedes the live one when its last run may be
 * taken over (failed, capped on Form B, or the running row `abandonedRunningId` whose workflow never ran) and inserts
 * the new run's row beside it, so the earlier request keeps its own id and receipt. Undefined when another caller
 * holds the key. `unclaimed`: the caller saw no
 * live row just before, so the insert alone is tried first (one round trip); a row that appeared meanwhile is judged
 * as ever, under its lock.
 */
export async function claimRequest(
  db: Knex,
  row: ClaimRow,
  opts: { takeOver: RequestState[]; unclaimed?: boolean; abandonedRunningId?: string },
): Promise<RequestRow | undefined> {
  if (opts.unclaimed) {
    const claimed = await insertClaim(db, row);
    if (claimed) return claimed;
  }
  return db.transaction(async (trx) => {
    const live = (await trx('requests')
      .where({ org_id: row.orgId, idempotency_key: row.idempotencyKey })
      .whereNull('superseded_at')
      .forUpdate()
      .first('id', 'state')) as { id: string; state: RequestState } | undefined;
    if (live) {
      // A running row is taken over only as the one its caller judged abandoned: never a row claimed since.
      const mayTake = live.state === 'running' ? live.id === opts.abandonedRunningId : opts.takeOver.includes(live.state);
      if (!mayTake) return undefined;
      await trx('requests').where({ id: live.id }).update({ superseded_at: trx.fn.now() });
    }
    return insertClaim(trx, row);
  });
}

/** The key's latest answered request (succeeded or capped), live or superseded. */
export function answeredByKey(db: DbOrTrx, orgId: string, idempotencyKey: string): Promise<RequestRow | undefined> {
  return db('requests')
    .where({ org_id: orgId, idempotency_key: idempotencyKey })
    .whereIn('state', ['succeeded', 'capped'])
    .orderBy('completed_at', 'desc')
    .first() as Promise<RequestRow | undefined>;
}

export async function markRequestFailed(db: DbOrTrx, requestId: string, code: string): Promise<void> {
  await db('requests').where({ id: requestId, state: 'running' }).update({ state: 'failed', error_code: code, completed_at: db.fn.now() });
}

/**
 * A run that ends without an answer: its hold released (the organisation's, or the plan's on a connected app's call;
 * each is a no-op without one) and the request failed with `code`, together; nothing billed.
 */
export async function abandonRequest(
  db: Knex,
  input: { orgId: string; requestId: string; code: string; unsettled?: Settlement },
): Promise<void> {
  const write = (unsettled: Settlement | undefined): Promise<void> =>
    db.transaction(async (trx) => {
      await release(trx, { orgId: input.orgId, requestId: input.requestId });
      await releasePlanCharge(trx, { requestId: input.requestId });
      await trx('requests')
        .where({ id: input.requestId })
        .update({
          state: 'failed',
          error_code: input.code,
          completed_at: trx.fn.now(),
          unsettled: unsettled ? JSON.stringify(storableJson(unsettled)) : null,
        });
    });
  // An outcome even this row refuses is dropped rather than retried forever: the failure itself must be recorded.
  await write(input.unsettled).catch((err: unknown) => {
    if (input.unsettled && isDeterministicDbError(err)) return write(undefined);
    throw err;
  });
}

/** The outcome a deterministic settle failure left on the live request of a key, if any. */
export async function unsettledOf(db: DbOrTrx, requestId: string): Promise<Settlement | undefined> {
  const row = (await db('requests').where({ id: requestId }).first('unsettled')) as { unsettled: Settlement | null } | undefined;
  return row?.unsettled ?? undefined;
}

export async function outcomeOf(db: DbOrTrx, requestId: string): Promise<Outcome | undefined> {
  const row = (await db('receipts').where({ request_id: requestId }).first('outcome')) as { outcome: Outcome } | undefined;
  return row?.outcome;
}

const NO_RECEIPT_REASON: Readonly<Record<RequestState, string>> = {
  running: 'The deliberation is still running; its receipt is written when it ends.',
  failed: 'The request failed before a deliberation was recorded; nothing was billed.',
  capped: 'The call was capped and its receipt superseded by a new run under the same key.',
  succeeded: 'No receipt was recorded for this request.',
};

/** The receipt of a past call, scoped to the organisation: undefined when the id is not one of its requests. */
export async function getReceipt(
  db: DbOrTrx,
  orgId: string,
  requestId: string,
): Promise<{ available: true; outcome: Outcome } | { available: false; reason: string; status: string } | undefined> {
  const row = (await db('requests as r')
    .leftJoin('receipts as x', 'x.request_id', 'r.id')
    .where({ 'r.id': requestId, 'r.org_id': orgId })
    .first('r.state', 'r.error_code', 'x.outcome')) as
    { state: RequestState; error_code: string | null; outcome: Outcome | null } | undefined;
  if (!row) return undefined;
  if (row.outcome) return { available: true, outcome: row.outcome };
  return {
    available: false,
    reason: row.error_code ? `${NO_RECEIPT_REASON[row.state]} (${row.error_code})` : NO_RECEIPT_REASON[row.state],
    status: row.state,
  };
}

/**
 * Recorded calls of a mode at a tier: the basis of Form B's per-Mtok quote once there are enough. Only live, billed
 * API-key calls count (spec 01 `basis: api_calls`, DESIGN §7): a test key's call bills nothing and a connected app's
 * call on a plan pays no mode fee, so counting them would pull the published rate toward zero. A call's key is its
 * request's `api_key_id`; a connected app's (`app:…`) and a console's (`console:…`) name no row of `api_keys`.
 */
export async function recordedCallStats(
  db: DbOrTrx,
  modeId: string,
  tier: string,
): Promise<{ n: number; inputTokens: number; outputTokens: number; modeFeeMicros: number }> {
  const row = (await db('receipts as x')
    .join('requests as r', 'r.id', 'x.request_id')
    .join('api_keys as k', 'k.id', 'r.api_key_id')
    .where({ 'x.mode_id': modeId, 'x.tier': tier, 'k.mode': 'live' })
    .whereRaw("x.outcome->>'payer' is distinct from 'plan'")
    .first(
      db.raw('count(*)::int as n'),
      db.raw('coalesce(sum(x.prompt_tokens),0)::bigint as input'),
      db.raw('coalesce(sum(x.completion_tokens),0)::bigint as output'),
      db.raw('coalesce(sum(x.mode_fee_micros),0)::bigint as fee'),
    )) as {
    n: number;
    input: bigint;
    output: bigint;
    fee: bigint;
  };
  return { n: row.n, inputTokens: Number(row.input), outputTokens: Number(row.output), modeFeeMicros: Number(row.fee) };
}
