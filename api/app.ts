// api/: the HTTP host. It mounts the edges (v1/ REST, mcp/, console/, oauth/) over what they share (http/, forms/);
// each edge parses, calls an operation and serialises, and none imports another.
import Koa from 'koa';
import Router from '@koa/router';
import { Client } from '@temporalio/client';
import type { Engines } from '../engines';
import { QuorumError } from '../domain/errors';
import { warmTokenizer } from '../domain/tokens';
import type { Logger } from '../infra/log';
import { errorMiddleware } from './http/errors';
import type { Form } from '../domain/form';
import { serialiserFor } from './forms';
import { checkHealth, type HealthDeps } from './http/health';
import { gate, newRequestId, type ApiState } from './http/gate';
import { completions } from './v1/completions';
import { estimate } from './v1/estimate';
import { model, models } from './v1/models';
import { openApiDocument } from './v1/openapi';
import { receipt } from './v1/receipts';
import { organizationRoutes } from './v1/organization';
import { deleteTranscriptRoute, exportRoute } from './v1/retention';
import { balanceRoute, ledgerRoute, receiptListRoute, usageRoute } from './v1/account';
import { cancelResponseRoute, createResponseRoute, deleteResponseRoute, inputItemsRoute, retrieveResponseRoute } from './v1/responses';
import { consoleRouter } from './console';
import { mcpEndpoint } from './mcp/server';
import { cancelRoute, launchCertify, launchTests, listRunsRoute, poll } from './v1/runs';
import { httpMetrics, metricsEndpoint, statusOf } from './http/metrics';
import { ACCOUNT_READ_SCOPE, type Edge } from './http/access';
import { OAuthServer } from './oauth/server';
import type { Config } from '../infra/config';
import type { SecretBox } from '../infra/secret-box';
import { runSettingsOf, type RunSettings } from '../operations/run-settings';

export interface AppDeps extends HealthDeps {
  log: Logger;
  /** The deployment's presentation (`QUORUM_FORM`); default B (DESIGN §9). */
  form?: Form;
  /** Starts and awaits deliberations; default: a client on `temporal` in `namespace`. */
  client?: Client;
  /** The estimate's classifier model, when a mode names one, and who would answer in the listings. */
  engines: Engines;
  /** Daily launch limits and questions in flight per run; default: from `config` (QUORUM_TEST_RUNS_PER_DAY…). */
  runs?: RunSettings;
  /** The deployment's settings, as the entry point validated them at start. */
  config: Config;
  /** Seals and opens secrets at rest (provider keys, webhook secrets, the authorization server's keys). */
  box: SecretBox;
}

/**
 * 401s on `/v1` and `/mcp` say where to sign in (RFC 9728 §5.1, as MCP authorization requires): clients that hold no
 * key discover the authorization server from this header.
 */
function challenge(oauth: OAuthServer): Koa.Middleware {
  return async (ctx, next) => {
    await next();
    const edge = /^\/(v1|mcp)(\/|$)/.exec(ctx.path)?.[1] as Edge | undefined;
    if (edge && ctx.status === 401) {
      ctx.set('WWW-Authenticate', oauth.challenge(edge, (ctx.body as { error?: { code?: string } } | undefined)?.error?.code ?? ''));
    }
  };
}

/** One line per request: what an operator needs to follow a call (its request id leads to the Temporal UI). */
function accessLog(log: Logger): Koa.Middleware {
  return async (ctx, next) => {
    const started = performance.now();
    // Read first: a mounted handler (the OAuth server) sees its own paths.
    const path = ctx.path;
    await next();
    if (path === '/healthz') return;
    const state = ctx.state as ApiState;
    log.info('request', {
      method: ctx.method,
      path,
      status: statusOf(ctx),
      ms: Math.round(performance.now() - started),
      request_id: state.requestId,
      org: state.auth?.orgId,
      code: statusOf(ctx) >= 400 ? (ctx.body as { error?: { code?: string } } | undefined)?.error?.code : undefined,
    });
  };
}

/**
 * `x-request-id` on every response, as OpenAI's API sends it (issue 40 item 7): the request's own id where its body
 * names one (`svc.request_id`: a completion's, whose receipt it is, or an error's), else a new one for this exchange.
 */
const requestIdHeader: Koa.Middleware = async (ctx, next) => {
  try {
    await next();
  } finally {
    const named = (ctx.body as { svc?: { request_id?: unknown } } | null | undefined)?.svc?.request_id;
    const own = (ctx.state as ApiState).requestId;
    ctx.set('x-request-id', typeof named === 'string' ? named : (own ?? newRequestId('req')));
  }
};

/**
 * The API is server-to-server only (spec 01): a browser `Origin` on `/v1` or `/mcp` is refused whatever the method or
 * path, preflights and unknown paths included, before anything else is looked at.
 */
const refuseBrowsers: Koa.Middleware = async (ctx, next) => {
  if (ctx.headers.origin !== undefined && /^\/(v1|mcp)(\/|$)/.test(ctx.path)) {
    throw new QuorumError('browser_origin_not_allowed', 'Requests from a browser are not accepted; call the API from a server.');
  }
  await next();
};

export function createApp(deps: AppDeps): Koa {
  const app = new Koa();
  app.proxy = true;
  const router = new Router();
  const serialiser = serialiserFor(deps.form ?? 'B');
  const { config } = deps;
  const production = config.QUORUM_ENV === 'production';
  const oauth = new OAuthServer(
    deps.db,
    {
      publicUrl: config.QUORUM_PUBLIC_URL ?? `http://localhost:${config.PORT}`,
      accessTokenTtlS: config.QUORUM_OAUTH_ACCESS_TTL_S,
      secureCookies: production,
    },
    deps.log,
    deps.box,
  );
  const routeDeps = {
    db: deps.db,
    config,
    box: deps.box,
    client: deps.client ?? new Client({ connection: deps.temporal, namespace: deps.namespace }),
    form: serialiser.form,
    engines: deps.engines,
    log: deps.log,
    serialiser,
    runs: deps.runs ?? runSettingsOf(config),
    oauth,
    secureCookies: production,
    selfTopUp: !production,
  };
  const openapi = openApiDocument(serialiser);
  // The first prompt should not pay for building the tokenizer.
  warmTokenizer();

  router.get('/healthz', async (ctx) => {
    const report = await checkHealth(deps);
    ctx.status = report.ok ? 200 : 503;
    ctx.body = report;
  });
  router.get('/openapi.json', (ctx) => {
    ctx.body = openapi;
  });
  router.get('/metrics', metricsEndpoint({ db: deps.db, log: deps.log, token: config.QUORUM_METRICS_TOKEN }));
  router.post('/v1/chat/completions', gate(routeDeps, 'completions', 'req'), completions(routeDeps));
  // Additive (issue 40): OpenAI's Responses API over the same deliberation; the completions scope runs and reads it.
  router.post('/v1/responses', gate(routeDeps, 'completions', 'req'), createResponseRoute(routeDeps));
  router.get('/v1/responses/:response_id', gate(routeDeps, 'completions'), retrieveResponseRoute(routeDeps));
  router.post('/v1/responses/:response_id/cancel', gate(routeDeps, 'completions'), cancelResponseRoute(routeDeps));
  router.get('/v1/responses/:response_id/input_items', gate(routeDeps, 'completions'), inputItemsRoute(routeDeps));
  router.delete('/v1/responses/:response_id', gate(routeDeps, 'completions'), deleteResponseRoute(routeDeps));
  router.post('/v1/estimate', gate(routeDeps, 'estimate', 'est'), estimate(routeDeps));
  router.get('/v1/models', gate(routeDeps, 'models'), models(routeDeps));
  router.get('/v1/models/:id', gate(routeDeps, 'models'), model(routeDeps));
  router.get('/v1/receipts/:request_id', gate(routeDeps, 'receipts'), receipt(routeDeps));
  // Additive (issue 41 item 5): a call's texts deleted, its figures kept; the organisation's rows as JSONL.
  router.delete('/v1/receipts/:request_id/transcript', gate(routeDeps, 'receipts'), deleteTranscriptRoute(routeDeps));
  router.get('/v1/organization/export', gate(routeDeps, ACCOUNT_READ_SCOPE), exportRoute(routeDeps));
  // Additive (issue 41 items 1 and 2): the account's reads; the `receipts` scope reads what its calls cost (docs/api-extensions.md).
  router.get('/v1/receipts', gate(routeDeps, ACCOUNT_READ_SCOPE), receiptListRoute(routeDeps));
  router.get('/v1/usage', gate(routeDeps, ACCOUNT_READ_SCOPE), usageRoute(routeDeps));
  router.get('/v1/balance', gate(routeDeps, ACCOUNT_READ_SCOPE), balanceRoute(routeDeps));
  router.get('/v1/ledger', gate(routeDeps, ACCOUNT_READ_SCOPE), ledgerRoute(routeDeps));
  router.post('/v1/tests', gate(routeDeps, 'tests'), launchTests(routeDeps));
  router.get('/v1/tests', gate(routeDeps, 'tests'), poll(routeDeps, 'test'));
  router.post('/v1/certify', gate(routeDeps, 'certify'), launchCertify(routeDeps));
  router.get('/v1/certify', gate(routeDeps, 'certify'), poll(routeDeps, 'certification'));
  router.post('/v1/tests/:batch_id/cancel', gate(routeDeps, 'tests'), cancelRoute(routeDeps, 'test'));
  router.post('/v1/certify/:batch_id/cancel', gate(routeDeps, 'certify'), cancelRoute(routeDeps, 'certification'));
  // Either scope lists runs: each reads its own kind (operations/run-list.ts).
  router.get('/v1/runs', gate(routeDeps, undefined), listRunsRoute(routeDeps));
  router.post('/mcp', mcpEndpoint(routeDeps, deps.log));
  // Additive (issue 41): the organisation's keys and activity log, for an admin key.
  organizationRoutes(router, routeDeps);

  // Outermost, so every request is timed with the status it ended with, errors and 404s included.
  app.use(httpMetrics());
  app.use(accessLog(deps.log));
  app.use(requestIdHeader);
  app.use(challenge(oauth));
  app.use(errorMiddleware(deps.log));
  app.use(oauth.metadataEndpoint());
  app.use(oauth.middleware());
  app.use(refuseBrowsers);
  app.use(router.routes());
  app.use(consoleRouter(routeDeps).routes());
  app.use((ctx) => {
    // No route took the request: a known path with another method is 405 with the methods it has (RFC 9110), anything else 404.
    const allowed = [...new Set(router.match(ctx.path, ctx.method).path.flatMap((layer) => layer.methods))];
    if (allowed.length > 0) {
      ctx.set('Allow', allowed.join(', '));
      throw new QuorumError('method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}.`);
    }
    throw new QuorumError('not_found', `No endpoint at ${ctx.method} ${ctx.path}.`);
  });
  return app;
}
