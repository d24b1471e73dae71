import type { Db } from '../db/knex';
import type { Engines } from '../engines';
import type { Logger } from '../infra/log';

/** What activities need from the outside world; built once per worker process. */
export interface ActivityDeps {
  db: Db;
  engines: Engines;
  log: Logger;
  /** Settings read by activities (e.g. QUORUM_SEARXNG_URL); process.env when absent. */
  env?: NodeJS.ProcessEnv;
}
