import type { RunPlanningContext } from '../domain/run-plan';
import type { Engines } from './index';

/** What a run plans with: the catalog, what the service's keys can run, and the organisation's own provider families. */
export function runPlanningContext(engines: Engines, ownFamilies: ReadonlySet<string>, simOnly: boolean): RunPlanningContext {
  return {
    find: (id) => engines.find(id),
    catalog: engines.catalog,
    serviceCanRun: (id) => engines.isAvailable(id),
    ownFamilies,
    simOnly,
  };
}

/** `QUORUM_SIM_STANDINS` (`on`/`off`): whether a `sim` engine may stand in for one with no key; by default on, except with `QUORUM_ENV=production`. */
export function simStandInsAllowed(env: NodeJS.ProcessEnv): boolean {
  const setting = env.QUORUM_SIM_STANDINS ?? (env.QUORUM_ENV === 'production' ? 'off' : 'on');
  return setting !== 'off';
}
