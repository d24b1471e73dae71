import type { KeyPrincipal } from './principal';
import { usageRows, type UsageDimension, type UsageRow } from '../db/repositories/usage';
import { isStorableText } from '../domain/storable-text';
import type { OperationDeps, StoreDeps } from './deps';
import { invalidParam, onlyParams, singleParam, timeWindow } from './query-params';

/**
 * `GET /v1/usage` (issue 41 item 1): the organisation's calls summed per UTC day or hour and per group, in the names
 * OpenAI's Usage API uses (`start_time`, `end_time`, `bucket_width`, `group_by`, `limit`, `page`).
 */

export type BucketWidth = '1d' | '1h';
const WIDTH_MS: Readonly<Record<BucketWidth, number>> = { '1d': 86_400_000, '1h': 3_600_000 };
/** Buckets per page unless asked, and the most (OpenAI's for these widths). */
const BUCKETS: Readonly<Record<BucketWidth, { default: number; max: number }>> = {
  '1d': { default: 7, max: 31 },
  '1h': { default: 24, max: 168 },
};

export const USAGE_DIMENSIONS = ['mode', 'key', 'tier', 'lane', 'user'] as const;
/** `metadata.<key>`: a key as OpenAI allows one in `metadata` (at most 64 characters). */
const METADATA_DIMENSION = /^metadata\.(.{1,64})$/s;
const MAX_GROUPS = 8;

export interface UsageRequest {
  start: Date;
  end: Date;
  width: BucketWidth;
  /** How many buckets this page holds at most. */
  limit: number;
  /** Where this page begins: `start`, or the `page` the one before returned. */
  pageStart: Date;
  groupBy: UsageDimension[];
  /** `api_key_ids`: only calls made with these keys (Quorum key ids); absent: every key. */
  apiKeyIds?: string[];
  /** `models`: only calls of these modes (Form A mode keys, Form B tickers, as the results name them); absent: every mode. */
  models?: string[];
}

/**
 * OpenAI's list parameters as its SDKs send them (`group_by[]=mode&group_by[]=key`, Koa reading the key as
 * `group_by[]`) or plainly (`group_by=mode&group_by=key`, `group_by=mode,key`); both spellings may be mixed.
 */
const LIST_PARAMS = ['group_by', 'api_key_ids', 'models'] as const;
const USAGE_PARAMS = ['start_time', 'end_time', 'bucket_width', 'limit', 'page', ...LIST_PARAMS.flatMap((p) => [p, `${p}[]`])];
/** A filter's most values, and the longest one: a key id or a mode key or ticker is far shorter. */
const MAX_FILTER_VALUES = 100;
const MAX_FILTER_VALUE = 200;

/** Every value of a list parameter, from both spellings, each split at commas; undefined when not sent. */
function listParam(query: Readonly<Record<string, unknown>>, param: string): string[] | undefined {
  const sent = [query[param], query[`${param}[]`]].filter((v) => v !== undefined);
  if (sent.length === 0) return undefined;
  return sent.flatMap((raw) => (Array.isArray(raw) ? (raw as unknown[]) : [raw])).flatMap((v) => String(v).split(','));
}

/**
 * `api_key_ids` or `models`: ids as the results name them, at least one. An id of no key or mode of the organisation
 * matches nothing (as OpenAI's filters do, and as `GET /v1/receipts` filters): an empty value, one too long or not
 * text, or too many, is 400 naming the parameter.
 */
function filterParam(query: Readonly<Record<string, unknown>>, param: 'api_key_ids' | 'models', what: string): string[] | undefined {
  const items = listParam(query, param);
  if (items === undefined) return undefined;
  const bad = items.find((v) => v.trim() === '' || v.length > MAX_FILTER_VALUE || !isStorableText(v));
  if (bad !== undefined) throw invalidParam(param, `\`${param}\` takes ${what}, comma-separated or repeated; not \`${bad.slice(0, 80)}\`.`);
  if (items.length > MAX_FILTER_VALUES) throw invalidParam(param, `\`${param}\` names at most ${MAX_FILTER_VALUES} values.`);
  return [...new Set(items)];
}

/** The query of `GET /v1/usage`; every bad value is 400 naming its parameter. */
export function parseUsageQuery(query: Readonly<Record<string, unknown>>, now: Date = new Date()): UsageRequest {
  onlyParams(query, USAGE_PARAMS);
  const { start, end: sent } = timeWindow(query);
  if (!start) throw invalidParam('start_time', '`start_time` is required: the window’s start in Unix seconds.');
  const end = sent ?? now;
  if (end <= start) throw invalidParam('end_time', '`end_time` (default: now) must be after `start_time`.');
  const widthText = singleParam(query, 'bucket_width') ?? '1d';
  if (widthText !== '1d' && widthText !== '1h') throw invalidParam('bucket_width', '`bucket_width` is `1d` or `1h`.');
  const width: BucketWidth = widthText;
  const limitText = singleParam(query, 'limit');
  const size = BUCKETS[width];
  const limit = limitText === undefined ? size.default : /^\d{1,4}$/.test(limitText) ? Number(limitText) : NaN;
  if (!(limit >= 1 && limit <= size.max))
    throw invalidParam('limit', `\`limit\` is a number of buckets from 1 to ${size.max} for \`${width}\` (default ${size.default}).`);
  const apiKeyIds = filterParam(query, 'api_key_ids', 'key ids (`key_…`)');
  const models = filterParam(query, 'models', 'modes as the results name them (Form A mode keys, Form B tickers)');
  return {
    start,
    end,
    width,
    limit,
    pageStart: pageOf(query, { start, end, width }),
    groupBy: parseGroupBy(listParam(query, 'group_by')),
    ...(apiKeyIds && { apiKeyIds }),
    ...(models && { models }),
  };
}

/** `page`: the `next_page` a page returned, the start of a bucket inside the window. */
function pageOf(query: Readonly<Record<string, unknown>>, w: { start: Date; end: Date; width: BucketWidth }): Date {
  const raw = singleParam(query, 'page');
  if (raw === undefined) return w.start;
  const ms = /^\d{1,12}$/.test(raw) ? Number(raw) * 1000 : NaN;
  if (!(ms > w.start.getTime() && ms < w.end.getTime() && ms % WIDTH_MS[w.width] === 0))
    throw invalidParam('page', '`page` is the `next_page` of the page before, for the same window and `bucket_width`.');
  return new Date(ms);
}

/** `group_by`: comma-separated, sent more than once, or as `group_by[]` (as OpenAI's clients send an array). */
function parseGroupBy(items: readonly string[] | undefined): UsageDimension[] {
  if (items === undefined) return [];
  const dims = items.map((item): UsageDimension => {
    if ((USAGE_DIMENSIONS as readonly string[]).includes(item)) return { by: item as (typeof USAGE_DIMENSIONS)[number] };
    const meta = METADATA_DIMENSION.exec(item);
    if (meta && isStorableText(meta[1])) return { by: 'metadata', key: meta[1] };
    throw invalidParam('group_by', `\`group_by\` takes ${USAGE_DIMENSIONS.join(', ')} or metadata.<key>; not \`${item.slice(0, 80)}\`.`);
  });
  const names = dims.map((d) => (d.by === 'metadata' ? `metadata.${d.key}` : d.by));
  if (new Set(names).size !== names.length || dims.length > MAX_GROUPS)
    throw invalidParam('group_by', `\`group_by\` names each grouping once, at most ${MAX_GROUPS}.`);
  return dims;
}

export interface UsageBucket {
  start: Date;
  end: Date;
  rows: UsageRow[];
}

export interface UsagePage {
  buckets: UsageBucket[];
  /** The next page's `page`, when the window goes on past this one. */
  nextPage: string | null;
}

/** The page's buckets: the first from `pageStart` to the next UTC boundary, the rest whole, the last cut at `end`. */
function bucketsOf(req: UsageRequest): { start: Date; end: Date }[] {
  const w = WIDTH_MS[req.width];
  const out: { start: Date; end: Date }[] = [];
  let at = req.pageStart.getTime();
  while (out.length < req.limit && at < req.end.getTime()) {
    const next = Math.min((Math.floor(at / w) + 1) * w, req.end.getTime());
    out.push({ start: new Date(at), end: new Date(next) });
    at = next;
  }
  return out;
}

/** A page of the organisation's usage: every bucket of it, those without calls empty. */
export async function usageOf(deps: StoreDeps & Pick<OperationDeps, 'form'>, auth: KeyPrincipal, req: UsageRequest): Promise<UsagePage> {
  const spans = bucketsOf(req);
  const pageEnd = spans[spans.length - 1].end;
  const rows = await usageRows(deps.db, {
    orgId: auth.orgId,
    start: req.pageStart,
    end: pageEnd,
    width: req.width === '1d' ? 'day' : 'hour',
    groupBy: req.groupBy,
    ...(req.apiKeyIds && { keyIds: req.apiKeyIds }),
    // A mode as this Form's results name it: Form A its key, Form B its ticker.
    ...(req.models && { modes: { by: deps.form === 'A' ? 'id' : 'ticker', values: req.models } }),
  });
  // A row's bucket is the UTC boundary before its calls; the page's first bucket may begin after it.
  const buckets = spans.map((span) => ({
    ...span,
    rows: rows.filter((r) => Math.max(r.bucket.getTime(), req.pageStart.getTime()) === span.start.getTime()),
  }));
  return { buckets, nextPage: pageEnd < req.end ? String(pageEnd.getTime() / 1000) : null };
}
