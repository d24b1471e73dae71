import type { Context } from 'koa';
import { pipeline, Readable } from 'node:stream';
import { stringify } from 'csv-stringify';
import { authOf } from '../http/gate';
import type { RouteDeps } from '../http/context';
import { balanceBody, callJson, callsBody, ledgerBody, ledgerEntryJson, usageBody } from '../forms/account';
import type { Json, JsonObject } from '../forms/json';
import type { Form } from '../../domain/form';
import { accountBalance } from '../../operations/ledger';
import { exportCalls, exportLedger, ledgerPage, listOrgCalls, parseCallListQuery, parseLedgerQuery } from '../../operations/call-list';
import type { ExportFormat } from '../../operations/call-list';
import { missingRequestId } from '../../operations/receipt';
import { parseUsageQuery, usageOf } from '../../operations/usage';

/**
 * The account's reads over REST (issue 41 items 1 and 2, beyond the spec): usage, balance, the calls and the ledger.
 * The two lists export every entry their filters admit with `format=jsonl` (one JSON entry a line, as the list's
 * `data` holds it) or `format=csv` (a header, then one row an entry); `format=json` (the default) pages.
 */

/** GET /v1/usage */
export function usageRoute(deps: RouteDeps) {
  return async (ctx: Context): Promise<void> => {
    const request = parseUsageQuery(ctx.query);
    ctx.body = usageBody(await usageOf(deps, authOf(ctx), request), deps.form);
  };
}

/** GET /v1/balance */
export function balanceRoute(deps: RouteDeps) {
  return async (ctx: Context): Promise<void> => {
    ctx.body = balanceBody(await accountBalance(deps, authOf(ctx).orgId));
  };
}

/** A listed call's CSV columns: its receipt's figures as this Form names them (dots reach into `charges`). */
const CALL_COLUMNS: Readonly<Record<Form, readonly string[]>> = {
  A: ['mode_key', 'mode_config_hash', 'billed_usd', 'token_charge_usd', 'q_surcharge_usd'],
  B: ['mode', 'billed_usd', 'charges.gateway_usd', 'charges.platform_fee_usd', 'charges.mode_fee_usd', 'cap_credit_usd', 'payer'],
};
const CALL_COMMON = ['request_id', 'status', 'receipt_available', 'reason', 'created_at', 'completed_at', 'lane'];
const CALL_TAIL = ['rounds', 'seat_count', 'prompt_tokens', 'completion_tokens', 'latency_ms', 'user', 'metadata'];
const LEDGER_COLUMNS = ['id', 'created_at', 'kind', 'amount_usd', 'held_delta_usd', 'request_id', 'note'];

/** A column's value in a listed entry (its receipt's fields read as its own); objects as JSON text, absent as empty. */
function cell(entry: JsonObject, column: string): string | number | boolean {
  const receipt = entry.receipt && typeof entry.receipt === 'object' && !Array.isArray(entry.receipt) ? entry.receipt : {};
  let value: Json | undefined = { ...entry, ...receipt };
  for (const part of column.split('.')) value = value && typeof value === 'object' && !Array.isArray(value) ? value[part] : undefined;
  if (value === undefined || value === null) return '';
  return typeof value === 'object' ? JSON.stringify(value) : value;
}

/**
 * An export's body: its first entry is read before anything is sent, so a refused cursor is still a 400 or 404; after
 * that the rows stream.
 */
async function sendExport(
  ctx: Context,
  name: string,
  format: ExportFormat,
  entries: AsyncGenerator<JsonObject>,
  columns: readonly string[],
): Promise<void> {
  const first = await entries.next();
  const all = (async function* all(): AsyncGenerator<JsonObject> {
    if (!first.done) yield first.value;
    yield* entries;
  })();
  ctx.set('Content-Disposition', `attachment; filename="${name}.${format}"`);
  if (format === 'jsonl') {
    ctx.type = 'application/x-ndjson';
    ctx.body = Readable.from(
      (async function* lines(): AsyncGenerator<string> {
        for await (const entry of all) yield `${JSON.stringify(entry)}\n`;
      })(),
    );
    return;
  }
  ctx.type = 'text/csv; charset=utf-8';
  const rows = (async function* rows(): AsyncGenerator<(string | number | boolean)[]> {
    for await (const entry of all) yield columns.map((c) => cell(entry, c));
  })();
  // `true`/`false` as JSON writes them (the library's default is 1 and empty).
  const csv = stringify({ header: true, columns: [...columns], cast: { boolean: (v) => String(v) } });
  // A failure while streaming (the database gone) ends the response rather than leaving it open.
  pipeline(Readable.from(rows), csv, (err) => err && csv.destroy(err));
  ctx.body = csv;
}

/** GET /v1/receipts: the organisation's calls, each as its receipt reads without transcripts. */
export function receiptListRoute(deps: RouteDeps) {
  return async (ctx: Context): Promise<void> => {
    // `/v1/receipts/` is a receipt's path with its id left out, as before the list existed.
    if (ctx.path.endsWith('/')) throw missingRequestId();
    const query = parseCallListQuery(ctx.query);
    const auth = authOf(ctx);
    if (query.format === 'json') {
      ctx.body = callsBody(deps.serialiser, await listOrgCalls(deps, auth, query));
      return;
    }
    const views = exportCalls(deps, auth, query);
    const entries = (async function* entries(): AsyncGenerator<JsonObject> {
      for await (const view of views) yield callJson(deps.serialiser, view);
    })();
    await sendExport(ctx, 'receipts', query.format, entries, [...CALL_COMMON, ...CALL_COLUMNS[deps.form], ...CALL_TAIL]);
  };
}

/** GET /v1/ledger */
export function ledgerRoute(deps: RouteDeps) {
  return async (ctx: Context): Promise<void> => {
    const query = parseLedgerQuery(ctx.query);
    const auth = authOf(ctx);
    if (query.format === 'json') {
      ctx.body = ledgerBody(await ledgerPage(deps, auth, query));
      return;
    }
    const rows = exportLedger(deps, auth, query);
    const entries = (async function* entries(): AsyncGenerator<JsonObject> {
      for await (const entry of rows) yield ledgerEntryJson(entry);
    })();
    await sendExport(ctx, 'ledger', query.format, entries, LEDGER_COLUMNS);
  };
}
