import type { Knex } from 'knex';
import type { DbOrTrx } from './shared';

/**
 * `GET /v1/organization/export` (issue 41 item 5): every row the organisation owns, one JSON object a line, each named
 * by its `object`. Secrets never leave: key hashes, sealed provider keys and the webhook secret are not exported, and
 * any binary column is dropped whatever its table.
 */
interface Exported {
  object: string;
  /** The organisation's rows of one table, in a stable order. */
  rows: (db: DbOrTrx, orgId: string) => Knex.QueryBuilder;
  omit?: readonly string[];
}

const byOrg =
  (table: string, ...order: string[]) =>
  (db: DbOrTrx, orgId: string): Knex.QueryBuilder =>
    db(table).where({ org_id: orgId }).orderBy(order).select('*');

const EXPORTED: readonly Exported[] = [
  { object: 'organization', rows: (db, orgId) => db('organisations').where({ id: orgId }).orderBy('id').select('*') },
  { object: 'balance', rows: byOrg('balances', 'org_id') },
  { object: 'ledger_entry', rows: byOrg('ledger_entries', 'id') },
  { object: 'api_key', rows: byOrg('api_keys', 'created_at', 'id'), omit: ['key_hash'] },
  {
    object: 'member',
    rows: (db, orgId) =>
      db('memberships as m')
        .join('people as p', 'p.id', 'm.person_id')
        .where('m.org_id', orgId)
        .orderBy(['m.created_at', 'm.person_id'])
        .select('m.person_id', 'p.name', 'p.email', 'm.role', 'm.created_at'),
  },
  { object: 'provider_key', rows: byOrg('provider_credentials', 'family'), omit: ['external_id'] },
  { object: 'mode', rows: byOrg('modes', 'id') },
  {
    object: 'mode_version',
    rows: (db, orgId) =>
      db('mode_versions as v')
        .join('modes as m', 'm.id', 'v.mode_id')
        .where('m.org_id', orgId)
        .orderBy(['v.mode_id', 'v.version'])
        .select('v.*'),
  },
  { object: 'request', rows: byOrg('requests', 'created_at', 'id') },
  { object: 'receipt', rows: byOrg('receipts', 'created_at', 'request_id') },
  {
    object: 'receipt_seat',
    rows: (db, orgId) =>
      db('receipt_seats as s')
        .join('receipts as x', 'x.request_id', 's.request_id')
        .where('x.org_id', orgId)
        .orderBy(['s.request_id', 's.round_number', 's.role'])
        .select('s.*'),
  },
  { object: 'response', rows: byOrg('responses', 'created_at', 'request_id') },
  { object: 'run', rows: byOrg('runs', 'created_at', 'id') },
  {
    object: 'run_question',
    rows: (db, orgId) =>
      db('run_questions as q')
        .join('runs as r', 'r.id', 'q.run_id')
        .where('r.org_id', orgId)
        .orderBy(['q.run_id', 'q.question_id'])
        .select('q.*'),
  },
  { object: 'question_set', rows: byOrg('question_sets', 'id') },
  { object: 'account_event', rows: byOrg('account_events', 'created_at', 'id') },
];

const BATCH = 500;

/** A row as JSON: bigints as decimal strings (exact), dates as ISO text, binary columns and `omit` dropped. */
function exportedRow(object: string, row: Record<string, unknown>, omit: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = { object };
  for (const [k, v] of Object.entries(row)) {
    if (omit.includes(k) || Buffer.isBuffer(v)) continue;
    out[k] = typeof v === 'bigint' ? v.toString() : v instanceof Date ? v.toISOString() : v;
  }
  return out;
}

/** The organisation's rows, table by table, in batches. */
export async function* organisationRows(db: DbOrTrx, orgId: string): AsyncGenerator<Record<string, unknown>> {
  for (const spec of EXPORTED) {
    for (let offset = 0; ; offset += BATCH) {
      const rows = (await spec.rows(db, orgId).limit(BATCH).offset(offset)) as Record<string, unknown>[];
      for (const row of rows) yield exportedRow(spec.object, row, spec.omit ?? []);
      if (rows.length < BATCH) break;
    }
  }
}
