import type { Db } from '../db/knex';
import type { Engines } from '../engines';
import type { Logger } from '../infra/log';

/** What activities need from the outside world (every activity group takes the same); built once per worker process. */
export interface ActivityDeps {
  db: Db;
  engines: Engines;
  log: Logger;
  /**
   * The environment as the entry point read it at start, loadConfig having validated it: the settings activities
   * read (QUORUM_SEARXNG_URL, QUORUM_ENV, QUORUM_SIM_STANDINS, QUORUM_STAND_IN, AWS_REGION).
   */
  env: NodeJS.ProcessEnv;
}
