import type { Context } from 'koa';
import { listModesForOrg } from '../../db/repositories/modes';
import { keyAllowsMode } from '../../domain/api-keys';
import { callCeilingMicros } from '../../domain/fees';
import { authOf } from '../middleware/gate';
import type { RouteDeps } from './context';
import { ratesOf } from './estimate';

/** GET /v1/models: the modes the organisation is entitled to, narrowed to those this key may call. */
export function models(deps: RouteDeps) {
  return async (ctx: Context): Promise<void> => {
    const { db, serialiser } = deps;
    const auth = authOf(ctx);
    const keyCeiling = auth.limits.maxCostMicros === null ? undefined : Number(auth.limits.maxCostMicros);
    const modes = (await listModesForOrg(db, auth.orgId)).filter((m) => keyAllowsMode(auth.allowedModes, m.id) || keyAllowsMode(auth.allowedModes, m.ticker));
    const data = await Promise.all(
      modes.map(async (mode) => serialiser.model({ mode, rates: await ratesOf(db, mode), ceilingMicros: callCeilingMicros(serialiser.form, mode.config, keyCeiling, undefined) })),
    );
    ctx.body = { object: 'list', data };
  };
}
