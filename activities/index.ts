import type { Db } from '../db/knex';
import type { Engines } from '../engines';
import type { Logger } from '../infra/log';
import { createAccountActivities } from './accounts';
import { createBenchmarkActivities } from './benchmark';
import { createDeliberationActivities } from './deliberation';

/** What activities need from the outside world; built once per worker process. */
export interface ActivityDeps {
  db: Db;
  engines: Engines;
  log: Logger;
  /** Settings read by activities (e.g. QUORUM_SEARXNG_URL); process.env when absent. */
  env?: NodeJS.ProcessEnv;
}

/** Temporal samples' habit: a factory closing over dependencies, so tests pass real ones of their own. */
export function createActivities(deps: ActivityDeps) {
  return { ...createAccountActivities(deps), ...createDeliberationActivities(deps), ...createBenchmarkActivities(deps) };
}

export type Activities = ReturnType<typeof createActivities>;
