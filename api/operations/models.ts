import type { AuthContext } from '../../db/repositories/api-keys';
import { listModesForOrg } from '../../db/repositories/modes';
import { keyAllowsMode } from '../../domain/api-keys';
import { callCeilingMicros } from '../../domain/fees';
import { keyCeilingMicros } from '../access';
import type { ModelView } from '../forms/shared';
import type { OperationDeps } from './deps';
import { ratesOf } from './estimate';

/** The modes the organisation is entitled to, narrowed to those this key may call. */
export async function listModels(deps: OperationDeps, auth: AuthContext): Promise<ModelView[]> {
  const { db, form } = deps;
  const modes = (await listModesForOrg(db, auth.orgId)).filter(
    (m) => keyAllowsMode(auth.allowedModes, m.id) || keyAllowsMode(auth.allowedModes, m.ticker),
  );
  return Promise.all(
    modes.map(async (mode) => ({
      mode,
      rates: await ratesOf(db, mode),
      ceilingMicros: callCeilingMicros(form, mode.config, keyCeilingMicros(auth), undefined),
    })),
  );
}
