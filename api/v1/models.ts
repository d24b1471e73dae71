import type { Context } from 'koa';
import { authOf } from '../http/gate';
import { listModels } from '../../operations/models';
import type { RouteDeps } from '../http/context';

/** GET /v1/models: the modes the organisation is entitled to, in this Form's shape. */
export function models(deps: RouteDeps) {
  return async (ctx: Context): Promise<void> => {
    ctx.body = { object: 'list', data: (await listModels(deps, authOf(ctx))).map((view) => deps.serialiser.model(view)) };
  };
}
