import Koa from 'koa';
import Router from '@koa/router';
import { QuorumError } from '../domain/errors';
import type { Logger } from '../infra/log';
import { errorMiddleware } from './errors';
import { checkHealth, type HealthDeps } from './health';

export interface AppDeps extends HealthDeps {
  log: Logger;
}

export function createApp(deps: AppDeps): Koa {
  const app = new Koa();
  app.proxy = true;
  const router = new Router();

  router.get('/healthz', async (ctx) => {
    const report = await checkHealth(deps);
    ctx.status = report.ok ? 200 : 503;
    ctx.body = report;
  });

  app.use(errorMiddleware(deps.log));
  app.use(router.routes());
  app.use((ctx) => {
    // No route took the request: a known path with another method is 405, anything else 404.
    if (router.match(ctx.path, ctx.method).path.length > 0) {
      throw new QuorumError('method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}.`);
    }
    throw new QuorumError('not_found', `No endpoint at ${ctx.method} ${ctx.path}.`);
  });
  return app;
}
