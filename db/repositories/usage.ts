import type { Lane } from '../../domain/classifier';
import { RECEIPT_RECORD_COLUMNS, receiptRecord, type ReceiptRecord, type ReceiptRecordRow } from './requests';
import type { DbOrTrx } from './shared';

/**
 * An organisation's calls read back (issue 41 items 1 and 2): usage summed per time bucket and group, and its calls a
 * page at a time. What a call was charged is read from the ledger; its tokens and the parts of its bill from its receipt.
 */

/** What usage may be grouped by; `metadata` by one key of the calls' `metadata`. */
export type UsageDimension = { by: 'mode' | 'key' | 'tier' | 'lane' | 'user' } | { by: 'metadata'; key: string };

export interface UsageQuery {
  orgId: string;
  /** Inclusive. */
  start: Date;
  /** Exclusive. */
  end: Date;
  width: 'day' | 'hour';
  groupBy: readonly UsageDimension[];
  /** Only calls made with these keys. */
  keyIds?: readonly string[];
  /** Only calls of these modes, by id or by the ticker their receipt names. */
  modes?: { by: 'id' | 'ticker'; values: readonly string[] };
}

/** One bucket's calls of one group: each dimension grouped by is set (null when the calls had none), the rest absent. */
export interface UsageRow {
  /** The bucket's start, on a UTC day or hour (before `start` for the window's first bucket when it begins mid-bucket). */
  bucket: Date;
  modeId?: string;
  ticker?: string;
  keyId?: string | null;
  tier?: string;
  lane?: Lane | null;
  user?: string | null;
  metadata?: Record<string, string | null>;
  calls: number;
  inputTokens: number;
  outputTokens: number;
  engineCostMicros: bigint;
  platformFeeMicros: bigint;
  modeFeeMicros: bigint;
  /** The `charge` entries' amounts (what the balance was charged before any cap credit). */
  chargedMicros: bigint;
  capCreditMicros: bigint;
}

const COLUMN: Readonly<Record<Exclude<UsageDimension['by'], 'metadata'>, string>> = {
  mode: 'mode_id',
  key: 'api_key_id',
  tier: 'tier',
  lane: 'lane',
  user: 'end_user',
};

/**
 * Every call with a receipt counts, at the time of its `charge` entry (the settle that wrote the receipt wrote it too),
 * or when it completed if the balance was not charged (a test key's call, a connected app's on a plan). The parts of
 * the bill count only for calls the balance was charged for, so over any window the money is the ledger's `charge` and
 * `cap_credit` entries of that window, exactly.
 */
export async function usageRows(db: DbOrTrx, q: UsageQuery): Promise<UsageRow[]> {
  const groups = q.groupBy.map((d, i) => (d.by === 'metadata' ? `metadata->>:meta${i} as g${i}` : `${COLUMN[d.by]} as g${i}`));
  const keys = q.groupBy.map((_, i) => `g${i}`);
  const bindings: Record<string, string | Date> = { orgId: q.orgId, start: q.start, end: q.end, width: q.width };
  // Filters bound as one JSON array each, read back as a set of text.
  const filters: string[] = [];
  if (q.keyIds) {
    bindings.keyIds = JSON.stringify(q.keyIds);
    filters.push('and r.api_key_id in (select jsonb_array_elements_text(cast(:keyIds as jsonb)))');
  }
  if (q.modes) {
    bindings.modes = JSON.stringify(q.modes.values);
    // The ticker a Form B result names the mode by: its receipt's, else the mode id (as api/forms/account.ts shows it).
    const column = q.modes.by === 'id' ? 'x.mode_id' : "coalesce(x.outcome->>'ticker', x.mode_id)";
    filters.push(`and ${column} in (select jsonb_array_elements_text(cast(:modes as jsonb)))`);
  }
  q.groupBy.forEach((d, i) => {
    if (d.by === 'metadata') bindings[`meta${i}`] = d.key;
  });
  const { rows } = await db.raw<{ rows: Record<string, unknown>[] }>(
    `with calls as (
       select x.mode_id, x.outcome->>'ticker' as ticker, x.tier, x.lane, r.api_key_id, r.end_user, r.metadata,
              x.prompt_tokens, x.completion_tokens, coalesce(c.created_at, x.completed_at) as at, c.id is not null as charged,
              x.gateway_micros, x.platform_fee_micros, x.mode_fee_micros,
              coalesce(-c.amount_micros, 0) as charge, coalesce(k.amount_micros, 0) as credit
         from receipts x
         join requests r on r.id = x.request_id
         left join ledger_entries c on c.org_id = x.org_id and c.request_id = x.request_id and c.kind = 'charge'
         left join ledger_entries k on k.org_id = x.org_id and k.request_id = x.request_id and k.kind = 'cap_credit'
        -- A call is charged after it began: the index on (org_id, created_at) bounds the scan.
        where x.org_id = :orgId and x.created_at < :end ${filters.join(' ')})
     select date_trunc(:width, at, 'UTC') as bucket${groups.map((g) => `, ${g}`).join('')},
            min(ticker) as ticker, count(*)::int as calls,
            sum(prompt_tokens)::bigint as input_tokens, sum(completion_tokens)::bigint as output_tokens,
            sum(case when charged then gateway_micros else 0 end)::bigint as engine,
            sum(case when charged then platform_fee_micros else 0 end)::bigint as platform,
            sum(case when charged then mode_fee_micros else 0 end)::bigint as mode_fee,
            sum(charge)::bigint as charged, sum(credit)::bigint as credited
       from calls
      where at >= :start and at < :end
      group by ${['bucket', ...keys].join(', ')}
      order by ${['bucket', ...keys].map((k) => `${k} nulls first`).join(', ')}`,
    bindings,
  );
  return rows.map((row) => usageRow(row, q.groupBy));
}

function usageRow(row: Record<string, unknown>, groupBy: readonly UsageDimension[]): UsageRow {
  const out: UsageRow = {
    bucket: row.bucket as Date,
    calls: row.calls as number,
    inputTokens: Number(row.input_tokens),
    outputTokens: Number(row.output_tokens),
    engineCostMicros: row.engine as bigint,
    platformFeeMicros: row.platform as bigint,
    modeFeeMicros: row.mode_fee as bigint,
    chargedMicros: row.charged as bigint,
    capCreditMicros: row.credited as bigint,
  };
  groupBy.forEach((d, i) => {
    const value = row[`g${i}`] as string | null;
    if (d.by === 'metadata') out.metadata = { ...out.metadata, [d.key]: value };
    else if (d.by === 'mode') Object.assign(out, { modeId: value, ticker: row.ticker as string });
    else if (d.by === 'key') out.keyId = value;
    else if (d.by === 'tier') out.tier = value ?? undefined;
    else if (d.by === 'lane') out.lane = value as Lane | null;
    else out.user = value;
  });
  return out;
}

/** Which of an organisation's calls a page of `GET /v1/receipts` lists. */
export interface CallFilter {
  /** A mode's id or its ticker. */
  mode?: string;
  keyId?: string;
  /** The receipt's status, or the request's state when it has none (running, failed). */
  status?: string;
  lane?: Lane;
  /** Began at or after. */
  start?: Date;
  /** Began before. */
  end?: Date;
  /** Each pair is in the call's `metadata`. */
  metadata?: Record<string, string>;
  /** Only calls after this one in the list's order (the last id of the page before). */
  after?: string;
}

export type CallRecord = ReceiptRecord & { requestId: string };

/** A page of the organisation's calls, newest first (then by id), with their receipts; `limit` at most. */
export async function listCalls(db: DbOrTrx, orgId: string, limit: number, filter: CallFilter): Promise<CallRecord[]> {
  const query = db('requests as r').leftJoin('receipts as x', 'x.request_id', 'r.id').where('r.org_id', orgId);
  if (filter.mode !== undefined) {
    const mode = filter.mode;
    query.whereIn('r.mode_id', db('modes').where('id', mode).orWhere('ticker', mode).select('id'));
  }
  if (filter.keyId !== undefined) query.where('r.api_key_id', filter.keyId);
  if (filter.status !== undefined) query.whereRaw('coalesce(x.status, r.state) = ?', [filter.status]);
  if (filter.lane !== undefined) query.where('x.lane', filter.lane);
  if (filter.start) query.where('r.created_at', '>=', filter.start);
  if (filter.end) query.where('r.created_at', '<', filter.end);
  if (filter.metadata) query.whereRaw('r.metadata @> cast(? as jsonb)', [JSON.stringify(filter.metadata)]);
  if (filter.after !== undefined)
    query.whereRaw('(r.created_at, r.id) < (select created_at, id from requests where id = ? and org_id = ?)', [filter.after, orgId]);
  const rows = (await query
    .orderBy([
      { column: 'r.created_at', order: 'desc' },
      { column: 'r.id', order: 'desc' },
    ])
    .limit(limit)
    .select('r.id', ...RECEIPT_RECORD_COLUMNS)) as (ReceiptRecordRow & { id: string })[];
  return rows.map((row) => ({ requestId: row.id, ...receiptRecord(row) }));
}

/** Whether the organisation has a call of this id (a page's cursor). */
export async function hasCall(db: DbOrTrx, orgId: string, requestId: string): Promise<boolean> {
  return (await db('requests').where({ org_id: orgId, id: requestId }).first('id')) !== undefined;
}
