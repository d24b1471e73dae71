import type { Db } from '../db/knex';
import type { Engines } from '../engines';
import type { SeatingSettings } from '../engines/seating-context';
import type { Config } from '../infra/config';
import type { Logger } from '../infra/log';
import type { SecretBox } from '../infra/secret-box';

/** What activities need from the outside world (every activity group takes the same); built once per worker process. */
export interface ActivityDeps {
  db: Db;
  engines: Engines;
  log: Logger;
  /** The settings activities read, from the Config the entry point validated at start. */
  config: SeatingSettings & Pick<Config, 'QUORUM_SEARXNG_URL'>;
  /** Opens organisations' own provider keys and webhook secrets, with the entry point's master key. */
  box: SecretBox;
}
