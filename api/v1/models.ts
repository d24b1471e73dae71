import type { Context } from 'koa';
import { authOf } from '../http/gate';
import { QuorumError } from '../../domain/errors';
import { listModels } from '../../operations/models';
import type { RouteDeps } from '../http/context';

/** GET /v1/models: the modes the organisation is entitled to, in this Form's shape. */
export function models(deps: RouteDeps) {
  return async (ctx: Context): Promise<void> => {
    ctx.body = { object: 'list', data: (await listModels(deps, authOf(ctx))).map((view) => deps.serialiser.model(view)) };
  };
}

/**
 * GET /v1/models/{id} (OpenAI's `models.retrieve`, issue 40 item 7): the list's entry of that id (a mode key in Form A,
 * a ticker in Form B), for a mode this caller may call; any other id is 404 `model_not_found`, as on a completion.
 */
export function model(deps: RouteDeps) {
  return async (ctx: Context): Promise<void> => {
    const id = String((ctx.params as Record<string, string | undefined>).id ?? '');
    const found = (await listModels(deps, authOf(ctx))).map((view) => deps.serialiser.model(view)).find((m) => m.id === id);
    if (!found)
      throw new QuorumError(
        'model_not_found',
        `No model \`${JSON.stringify(id).slice(1, -1)}\` this key may call; GET /v1/models lists them.`,
        {
          param: 'model',
        },
      );
    ctx.body = found;
  };
}
