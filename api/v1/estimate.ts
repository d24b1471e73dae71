import type { Context } from 'koa';
import { readJsonObject } from '../http/body';
import { authOf, startedAt } from '../http/gate';
import { estimate as runEstimate } from '../../operations/estimate';
import { parseRequest } from '../../operations/requests/common';
import type { RouteDeps } from '../http/context';

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
