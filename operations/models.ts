import type { AuthContext } from '../db/repositories/api-keys';
import { listModesForOrg } from '../db/repositories/modes';
import { keyAllowsMode } from '../domain/api-keys';
import type { ModeConfig } from '../domain/modes';
import { ownProviderFamilies } from '../db/repositories/provider-credentials';
import { simStandInsAllowed } from '../engines/run-planning';
import type { TierRates } from '../domain/estimate';
import type { ModeRecord } from '../domain/modes';
import type { OperationDeps } from './deps';
import { planPermitsMode } from '../domain/plan-rules';
import { callerCeilingMicros, ratesOf } from './estimate';

export interface ModelView {
  mode: ModeRecord;
  rates: TierRates;
  /** null: no per-call ceiling (a connected app's call on a plan). */
  ceilingMicros: number | null;
  /** Designed engines a simulated engine answers for in this (development) deployment; empty in production. */
  simulatedEngines: string[];
}

/** Every engine a mode is designed to call: its seats and their backups on every tier, and its staff. */
function designedEngines(config: ModeConfig): string[] {
  const rows = Object.values(config.tiers).flatMap((row) => (row ? [...row.seats, ...(row.backups ?? [])] : []));
  const { judge, synthesis, classifier } = config.staff;
  return [...new Set([...rows, judge.engine, judge.backup, synthesis.engine, synthesis.backup, classifier?.engine])].filter(
    (id): id is string => typeof id === 'string',
  );
}

/**
 * The modes the organisation is entitled to, narrowed to those this key may call (a connected app: those the
 * person's plan permits, with no per-call ceiling); each with the designed engines a
 * simulated engine would answer for here (development only: no service key and none of the organisation's own),
 * so a listing never passes off simulated answers as a real model's.
 */
export async function listModels(deps: OperationDeps & { env: NodeJS.ProcessEnv }, auth: AuthContext): Promise<ModelView[]> {
  const { db, form } = deps;
  const [entitled, own] = await Promise.all([listModesForOrg(db, auth.orgId), ownProviderFamilies(db, auth.orgId)]);
  const modes = entitled.filter(
    (m) =>
      (keyAllowsMode(auth.allowedModes, m.id) || keyAllowsMode(auth.allowedModes, m.ticker)) &&
      (!auth.app || planPermitsMode(auth.app.plan, m)),
  );
  const standIns = simStandInsAllowed(deps.env);
  const simulated = (config: ModeConfig): string[] =>
    standIns
      ? designedEngines(config).filter((id) => {
          const family = id.split('/')[0];
          return family !== 'sim' && !deps.engines.isAvailable(id) && !own.has(family);
        })
      : [];
  return Promise.all(
    modes.map(async (mode) => ({
      mode,
      rates: await ratesOf(db, mode),
      ceilingMicros: callerCeilingMicros(form, auth, mode, undefined),
      simulatedEngines: simulated(mode.config),
    })),
  );
}
