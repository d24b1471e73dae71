import type { Context } from 'koa';
import { readJsonObject } from '../body';
import { authOf, startedAt } from '../middleware/gate';
import { estimate as runEstimate } from '../operations/estimate';
import { parseRequest } from '../schemas/common';
import type { RouteDeps } from './context';

/** POST /v1/estimate, behind the gate: body (400) → the estimate operation → this Form's shape. */
export function estimate(deps: RouteDeps) {
  return async (ctx: Context): Promise<void> => {
    const { serialiser } = deps;
    const body = parseRequest(serialiser.requests.estimate, await readJsonObject(ctx));
    ctx.body = serialiser.estimate(
      await runEstimate(deps, authOf(ctx), { requestId: String(ctx.state.requestId), body, startedAt: startedAt(ctx) }),
    );
  };
}
