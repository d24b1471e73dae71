import type { RunSeatingContext } from '../domain/run-lineup';
import type { SeatingContext } from '../domain/seat-assignment';
import type { Config } from '../infra/config';
import type { Engines } from './index';

/** What seating takes of the Config: whether `sim` engines may stand in, and which engine stands in. */
export type SeatingSettings = Pick<Config, 'QUORUM_ENV' | 'QUORUM_SIM_STANDINS' | 'QUORUM_STAND_IN'>;

/**
 * What a call's seats are planned with: what the service's keys can run, the organisation's own provider families
 * (none for a test key or a plan), whether a `sim` engine may stand in here. The call's plan and every listing of who
 * would answer (`/v1/models`, `list_modes`) are built on this one context, so they cannot disagree.
 */
export function callSeatingContext(
  engines: Pick<Engines, 'find' | 'isAvailable'>,
  call: { ownFamilies: ReadonlySet<string>; simOnly: boolean },
  settings: SeatingSettings,
): SeatingContext {
  return {
    find: (id) => engines.find(id),
    serviceCanRun: (id) => engines.isAvailable(id),
    ownFamilies: call.ownFamilies,
    simOnly: call.simOnly,
    simStandIns: simStandInsAllowed(settings),
    standIn: settings.QUORUM_STAND_IN,
  };
}

/** What a run plans with: the catalog, what the service's keys can run, and the organisation's own provider families. */
export function runSeatingContext(engines: Engines, ownFamilies: ReadonlySet<string>, simOnly: boolean): RunSeatingContext {
  return {
    find: (id) => engines.find(id),
    catalog: engines.catalog,
    serviceCanRun: (id) => engines.isAvailable(id),
    ownFamilies,
    simOnly,
  };
}

/** `QUORUM_SIM_STANDINS` (`on`/`off`): whether a `sim` engine may stand in for one with no key; by default on, except with `QUORUM_ENV=production`. */
export function simStandInsAllowed(settings: Pick<Config, 'QUORUM_ENV' | 'QUORUM_SIM_STANDINS'>): boolean {
  const setting = settings.QUORUM_SIM_STANDINS ?? (settings.QUORUM_ENV === 'production' ? 'off' : 'on');
  return setting !== 'off';
}
