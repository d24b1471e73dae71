import type Koa from 'koa';
import { Gauge, Histogram, Registry } from 'prom-client';
import type { Db } from '../../db/knex';
import type { LedgerKindTotal } from '../../db/repositories/ledger';
import type { Logger } from '../../infra/log';
import { DURATION_BUCKETS, metricsAuthorised } from '../../infra/metrics';
import { serviceLedgerTotals } from '../../operations/ledger';
import { registry } from '../../operations/metrics';

/**
 * The API process's HTTP metrics, in the registry the operations record deliberations in (docs/metrics.md), served
 * at `/metrics` with the ledger's totals.
 */

const httpDuration = new Histogram({
  name: 'quorum_http_request_duration_seconds',
  help: 'HTTP requests by route pattern (never the raw path) and status, from the first byte in to the response closed',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: DURATION_BUCKETS,
  registers: [registry],
});

/** The route pattern @koa/router matched (`/v1/receipts/:request_id`): ids never become label values. */
function routeOf(ctx: Koa.Context): string {
  const matched = (ctx as Koa.Context & { _matchedRoute?: string | RegExp })._matchedRoute;
  return matched === undefined ? 'unmatched' : String(matched);
}

/** The status sent: a handler that writes the response itself (the MCP transport, the OAuth server) bypasses ctx.status. */
export function statusOf(ctx: Koa.Context): number {
  return ctx.respond === false ? ctx.res.statusCode : ctx.status;
}

/** Times every request to its response's close, so a streamed body counts until its last byte. */
export function httpMetrics(): Koa.Middleware {
  return async (ctx, next) => {
    const end = httpDuration.startTimer();
    ctx.res.once('close', () => end({ method: ctx.method, route: routeOf(ctx), status: String(statusOf(ctx)) }));
    await next();
  };
}

/** How long one read of the ledger's totals serves scrapes: several scrapers, or a fast one, cost one query. */
const LEDGER_CACHE_MS = 5_000;

/**
 * The ledger's totals as gauges, read at scrape time from Postgres (one grouped query, cached). A database that does
 * not answer leaves them out of that scrape rather than failing the rest.
 */
function ledgerRegistry(db: Db, log: Logger): Registry {
  const ledger = new Registry();
  let cached: { at: number; totals: Promise<LedgerKindTotal[] | undefined> } | undefined;
  const totals = (): Promise<LedgerKindTotal[] | undefined> => {
    if (!cached || Date.now() - cached.at > LEDGER_CACHE_MS) {
      cached = {
        at: Date.now(),
        totals: serviceLedgerTotals({ db }).catch((err: unknown) => {
          log.warn('metrics: ledger totals unavailable', { err });
          return undefined;
        }),
      };
    }
    return cached.totals;
  };
  const usd = (micros: bigint): number => Number(micros) / 1_000_000;
  new Gauge({
    name: 'quorum_ledger_amount_usd',
    help: "Σ amount of every organisation's ledger entries of a kind, USD (Σ over kinds = Σ balances)",
    labelNames: ['kind'] as const,
    registers: [ledger],
    async collect() {
      this.reset();
      for (const t of (await totals()) ?? []) this.set({ kind: t.kind }, usd(t.amountMicros));
    },
  });
  new Gauge({
    name: 'quorum_ledger_entries',
    help: 'Ledger entries of a kind, every organisation',
    labelNames: ['kind'] as const,
    registers: [ledger],
    async collect() {
      this.reset();
      for (const t of (await totals()) ?? []) this.set({ kind: t.kind }, t.entries);
    },
  });
  new Gauge({
    name: 'quorum_ledger_reserved_usd',
    help: 'Σ reserved deltas of every ledger entry, USD: what deliberations in flight hold now',
    registers: [ledger],
    async collect() {
      this.reset();
      const all = await totals();
      if (all) this.set(usd(all.reduce((n, t) => n + t.reservedDeltaMicros, 0n)));
    },
  });
  return ledger;
}

/**
 * `GET /metrics`, outside `/v1`: no caller's key. In production only the scrape network should reach it (a
 * load balancer rule or network policy); QUORUM_METRICS_TOKEN adds a bearer token a scraper must send.
 */
export function metricsEndpoint(deps: { db: Db; log: Logger; token?: string }): Koa.Middleware {
  const ledger = ledgerRegistry(deps.db, deps.log);
  return async (ctx) => {
    if (!metricsAuthorised(ctx.get('authorization') || undefined, deps.token)) {
      ctx.status = 401;
      ctx.set('WWW-Authenticate', 'Bearer');
      ctx.body = 'metrics need the scrape token\n';
      return;
    }
    ctx.body = (await registry.metrics()) + (await ledger.metrics());
    ctx.set('Content-Type', registry.contentType);
  };
}
