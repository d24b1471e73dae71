import type { KeyPrincipal } from './principal';
import { hasLedgerEntry, LEDGER_KINDS, listLedger, type LedgerEntry, type LedgerFilter, type LedgerKind } from '../db/repositories/ledger';
import { hasCall, listCalls, type CallFilter } from '../db/repositories/usage';
import type { RequestState } from '../db/repositories/requests';
import type { ReceiptStatus } from '../domain/outcome';
import { QuorumError } from '../domain/errors';
import { isStorableText } from '../domain/storable-text';
import type { StoreDeps } from './deps';
import { invalidParam, onlyParams, pageLimit, singleParam, timeWindow, type PageSize } from './query-params';
import { receiptView, type ReceiptView } from './receipt';

/**
 * `GET /v1/receipts` and `GET /v1/ledger` (issue 41 item 2): the organisation's calls, each as its receipt without
 * transcripts, and its ledger entries; newest first, a page at a time after the last id of the page before, or every
 * one at once as JSON Lines or CSV (`format`).
 */

export { LEDGER_KINDS };

export const LIST_PAGE: PageSize = { max: 100, default: 20 };
export const EXPORT_FORMATS = ['json', 'jsonl', 'csv'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];
/** An export reads this many rows at a time. */
const EXPORT_CHUNK = 500;

function formatOf(query: Readonly<Record<string, unknown>>): ExportFormat {
  const raw = singleParam(query, 'format') ?? 'json';
  if (!(EXPORT_FORMATS as readonly string[]).includes(raw)) throw invalidParam('format', '`format` is `json`, `jsonl` or `csv`.');
  return raw as ExportFormat;
}

/** Text a lookup can hold (no NUL), of a sane length: else the parameter is refused by name. */
function textParam(query: Readonly<Record<string, unknown>>, param: string, max = 200): string | undefined {
  const raw = singleParam(query, param);
  if (raw !== undefined && (raw.length === 0 || raw.length > max || !isStorableText(raw)))
    throw invalidParam(param, `\`${param}\` must be 1 to ${max} characters of text.`);
  return raw;
}

export const CALL_STATUSES: readonly (ReceiptStatus | RequestState)[] = ['running', 'succeeded', 'capped', 'cancelled', 'failed'];
const LANES = ['express', 'panel'] as const;
/** `metadata[<key>]=<value>`, as OpenAI's list of stored chat completions filters. */
const METADATA_PARAM = /^metadata\[(.{1,64})\]$/s;
const CALL_PARAMS = ['limit', 'after', 'mode', 'key', 'status', 'lane', 'start_time', 'end_time', 'format'];

export interface CallListQuery {
  limit: number;
  format: ExportFormat;
  filter: CallFilter;
}

export function parseCallListQuery(query: Readonly<Record<string, unknown>>): CallListQuery {
  onlyParams(query, CALL_PARAMS, METADATA_PARAM);
  const status = singleParam(query, 'status');
  if (status !== undefined && !(CALL_STATUSES as readonly string[]).includes(status))
    throw invalidParam('status', `\`status\` is one of ${CALL_STATUSES.join(', ')}.`);
  const lane = singleParam(query, 'lane');
  if (lane !== undefined && !(LANES as readonly string[]).includes(lane)) throw invalidParam('lane', '`lane` is `express` or `panel`.');
  const metadata: Record<string, string> = {};
  for (const param of Object.keys(query)) {
    const key = METADATA_PARAM.exec(param)?.[1];
    if (key === undefined) continue;
    if (!isStorableText(key)) throw invalidParam(param, `\`${param}\` names no metadata key a call can have.`);
    metadata[key] = textParam(query, param, 512) ?? '';
  }
  return {
    limit: pageLimit(singleParam(query, 'limit'), LIST_PAGE),
    format: formatOf(query),
    filter: {
      ...timeWindow(query),
      after: textParam(query, 'after'),
      mode: textParam(query, 'mode'),
      keyId: textParam(query, 'key'),
      status,
      lane: lane as CallFilter['lane'],
      metadata: Object.keys(metadata).length > 0 ? metadata : undefined,
    },
  };
}

export interface CallPage {
  calls: ReceiptView[];
  hasMore: boolean;
}

/** A page of the organisation's calls; `after` naming none of its calls is 404, as another organisation's id is. */
export async function listOrgCalls(deps: StoreDeps, auth: KeyPrincipal, query: CallListQuery): Promise<CallPage> {
  const { after } = query.filter;
  if (after !== undefined && !(await hasCall(deps.db, auth.orgId, after)))
    throw new QuorumError('receipt_not_found', '`after` names no call of this organisation: pass the `last_id` of the page before.', {
      param: 'after',
    });
  // One more than the page says whether another follows.
  const rows = await listCalls(deps.db, auth.orgId, query.limit + 1, query.filter);
  return { calls: rows.slice(0, query.limit).map((r) => receiptView(r.requestId, r, false)), hasMore: rows.length > query.limit };
}

/** Every call the query's filters admit (from its `after` on), read a chunk at a time. */
export async function* exportCalls(deps: StoreDeps, auth: KeyPrincipal, query: CallListQuery): AsyncGenerator<ReceiptView> {
  let page = await listOrgCalls(deps, auth, { ...query, limit: EXPORT_CHUNK });
  for (;;) {
    yield* page.calls;
    const last = page.calls.at(-1);
    if (!page.hasMore || !last) return;
    page = await listOrgCalls(deps, auth, { ...query, limit: EXPORT_CHUNK, filter: { ...query.filter, after: requestIdOf(last) } });
  }
}

export function requestIdOf(view: ReceiptView): string {
  return view.available ? view.outcome.requestId : view.requestId;
}

const LEDGER_PARAMS = ['limit', 'after', 'kind', 'start_time', 'end_time', 'format'];

export interface LedgerQuery {
  limit: number;
  format: ExportFormat;
  after?: string;
  filter: Omit<LedgerFilter, 'beforeId'>;
}

export function parseLedgerQuery(query: Readonly<Record<string, unknown>>): LedgerQuery {
  onlyParams(query, LEDGER_PARAMS);
  const after = singleParam(query, 'after');
  if (after !== undefined && !/^\d{1,18}$/.test(after))
    throw invalidParam('after', '`after` is a ledger entry’s `id`: the `last_id` of the page before.');
  // `kind` comma-separated, or sent more than once.
  const kindsRaw =
    query.kind === undefined
      ? undefined
      : (Array.isArray(query.kind) ? (query.kind as unknown[]) : [query.kind]).flatMap((v) => String(v).split(','));
  const bad = kindsRaw?.find((k) => !(LEDGER_KINDS as readonly string[]).includes(k));
  if (bad !== undefined) throw invalidParam('kind', `\`kind\` takes ${LEDGER_KINDS.join(', ')}; not \`${bad.slice(0, 40)}\`.`);
  return {
    limit: pageLimit(singleParam(query, 'limit'), LIST_PAGE),
    format: formatOf(query),
    after,
    filter: { ...timeWindow(query), kinds: kindsRaw as LedgerKind[] | undefined },
  };
}

export interface LedgerPage {
  entries: LedgerEntry[];
  hasMore: boolean;
}

/** A page of the organisation's ledger; `after` naming none of its entries is 404. */
export async function ledgerPage(deps: StoreDeps, auth: KeyPrincipal, query: LedgerQuery): Promise<LedgerPage> {
  if (query.after !== undefined && !(await hasLedgerEntry(deps.db, auth.orgId, query.after)))
    throw new QuorumError('not_found', '`after` names no ledger entry of this organisation: pass the `last_id` of the page before.', {
      param: 'after',
    });
  const rows = await listLedger(deps.db, auth.orgId, query.limit + 1, { ...query.filter, beforeId: query.after });
  return { entries: rows.slice(0, query.limit), hasMore: rows.length > query.limit };
}

/** Every entry the query's filters admit (from its `after` on), read a chunk at a time. */
export async function* exportLedger(deps: StoreDeps, auth: KeyPrincipal, query: LedgerQuery): AsyncGenerator<LedgerEntry> {
  let page = await ledgerPage(deps, auth, { ...query, limit: EXPORT_CHUNK });
  for (;;) {
    yield* page.entries;
    const last = page.entries.at(-1);
    if (!page.hasMore || !last) return;
    page = await ledgerPage(deps, auth, { ...query, limit: EXPORT_CHUNK, after: last.id });
  }
}
