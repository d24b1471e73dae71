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
