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
  app.use(
    router.allowedMethods({
      throw: true,
      methodNotAllowed: () => new QuorumError('method_not_allowed', 'This method is not allowed on this path.'),
      notImplemented: () => new QuorumError('method_not_allowed', 'This method is not supported.'),
    }),
  );
  // Reached only when no route matched the path at all.
  app.use((ctx) => {
    throw new QuorumError('not_found', `No endpoint at ${ctx.method} ${ctx.path}.`);
  });
  return app;
}
