import type { Knex } from 'knex';
import type { Outcome, Settlement } from '../../domain/outcome';
import { BILLABLE_COLUMNS, releaseIn, type BillableRow } from './ledger';
import { releasePlanCharge } from './plans';
import { storableJson } from '../../domain/storable-text';
import { preparedAs } from '../prepared';
import { isDeterministicDbError, type DbOrTrx } from './shared';

export type RequestState = 'running' | 'succeeded' | 'failed' | 'capped' | 'cancelled';

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

/** A request's OpenAI `user` and `metadata` as its caller sent them; null when not sent. */
export interface CallerFields {
  endUser: string | null;
  metadata: Record<string, string> | null;
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
  /** The caller's OpenAI `user` and `metadata` (issue 40), shown on the receipt; absent when not sent. */
  endUser?: string;
  metadata?: Record<string, string>;
}

/**
 * When a call's first statement may insert its claim: always (a test key bills nothing), when the organisation's
 * balance row admits a hold of `holdMicros` (no billing state refuses it, the available balance covers it: never
 * looser than `assertBillableRow`, so a 402 leaves no row), or never (a plan's allowance is judged first).
 */
export type ClaimAdmission = { kind: 'always' } | { kind: 'balance'; holdMicros: bigint } | { kind: 'never' };

const REQUEST_COLUMNS = ['id', 'org_id', 'idempotency_key', 'workflow_id', 'fingerprint', 'state', 'error_code', 'created_at'] as const;

/**
 * A call's first round trip (DESIGN §4, §8): the key's live request; with a `balance` admission the organisation's
 * balance row judged for the hold (none: no such organisation); and, when the key has no live row and the admission
 * lets it, the new run's claim inserted, in the same statement. `claimed` false leaves the caller to judge the key's
 * row (replay, 409, take-over) and the balance as before, then `claimRequest`.
 */
export async function claimOrFind(
  db: DbOrTrx,
  row: ClaimRow,
  admission: ClaimAdmission,
): Promise<{ claimed: boolean; request: RequestRow | undefined; balance: BillableRow | undefined }> {
  const byBalance = admission.kind === 'balance';
  const admitted =
    admission.kind === 'never'
      ? 'false'
      : byBalance
        ? 'exists (select 1 from b where b.refusal is null and b.balance_micros - b.reserved_micros >= :hold)'
        : 'true';
  // Each part of the one row is null when absent: no balance read or no organisation, no live request, no claim.
  type FirstRow = { [K in keyof BillableRow]: BillableRow[K] | null } & { [K in keyof RequestRow]: RequestRow[K] | null } & {
    claimed_id: string | null;
  };
  const text = `with b as (select ${BILLABLE_COLUMNS} from balances b where b.org_id = :orgId and :byBalance),
          live as (select ${REQUEST_COLUMNS.join(', ')} from requests
                    where org_id = :orgId and idempotency_key = :key and superseded_at is null),
          claim as (insert into requests (id, org_id, api_key_id, idempotency_key, workflow_id, fingerprint, mode_id, model, state,
                                          end_user, metadata)
                    select :id, :orgId, :apiKeyId, :key, :workflowId, :fingerprint, :modeId, :model, 'running',
                           :endUser, cast(:metadata as jsonb)
                     where not exists (select 1 from live) and ${admitted}
                    on conflict (org_id, idempotency_key) where superseded_at is null do nothing
                    returning id)
     select b.balance_micros, b.reserved_micros, b.refusal, live.*, claim.id as claimed_id
       from (select 1) one left join b on true left join live on true left join claim on true`;
  const { rows } = await db
    .raw<{ rows: FirstRow[] }>(text, {
      hold: (byBalance ? admission.holdMicros : 0n).toString(),
      byBalance,
      orgId: row.orgId,
      key: row.idempotencyKey,
      id: row.id,
      apiKeyId: row.apiKeyId,
      workflowId: row.workflowId,
      fingerprint: row.fingerprint,
      modeId: row.modeId,
      model: row.model,
      endUser: row.endUser ?? null,
      metadata: row.metadata ? JSON.stringify(row.metadata) : null,
    })
    .options(preparedAs(text));
  const { balance_micros, reserved_micros, refusal, claimed_id, ...live } = rows[0];
  const balance = balance_micros === null || reserved_micros === null ? undefined : { balance_micros, reserved_micros, refusal };
  const request = live.id === null ? undefined : (live as RequestRow);
  return { claimed: claimed_id !== null, request, balance };
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
      end_user: row.endUser ?? null,
      metadata: row.metadata ? JSON.stringify(row.metadata) : null,
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
      await releaseIn(trx, { orgId: input.orgId, requestId: input.requestId });
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
  cancelled: 'No receipt was recorded for this request.',
};

/** A call's receipt when it has one, else why not; and what its caller sent as `user` and `metadata`. */
export type ReceiptRecord = ({ available: true; outcome: Outcome } | { available: false; reason: string; status: string }) & {
  caller: CallerFields;
};

/** What `receiptRecord` reads of a request joined to its receipt (`r`, `x`). */
export const RECEIPT_RECORD_COLUMNS = ['r.state', 'r.error_code', 'x.outcome', 'r.end_user', 'r.metadata'] as const;

export interface ReceiptRecordRow {
  state: RequestState;
  error_code: string | null;
  outcome: Outcome | null;
  end_user: string | null;
  metadata: Record<string, string> | null;
}

export function receiptRecord(row: ReceiptRecordRow): ReceiptRecord {
  const caller: CallerFields = { endUser: row.end_user, metadata: row.metadata };
  if (row.outcome) return { available: true, outcome: row.outcome, caller };
  return {
    caller,
    available: false,
    reason: row.error_code ? `${NO_RECEIPT_REASON[row.state]} (${row.error_code})` : NO_RECEIPT_REASON[row.state],
    status: row.state,
  };
}

/** The receipt of a past call, scoped to the organisation: undefined when the id is not one of its requests. */
export async function getReceipt(db: DbOrTrx, orgId: string, requestId: string): Promise<ReceiptRecord | undefined> {
  const row = (await db('requests as r')
    .leftJoin('receipts as x', 'x.request_id', 'r.id')
    .where({ 'r.id': requestId, 'r.org_id': orgId })
    .first(...RECEIPT_RECORD_COLUMNS)) as ReceiptRecordRow | undefined;
  return row && receiptRecord(row);
}
