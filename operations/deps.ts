// operations/: the application layer every edge and the CLI call, (deps, principal, input) → result or QuorumError.
import type { Client } from '@temporalio/client';
import type { Db } from '../db/knex';
import type { Form } from '../domain/form';
import type { Engines } from '../engines';
import type { Config } from '../infra/config';
import type { Logger } from '../infra/log';
import type { SecretBox } from '../infra/secret-box';

/**
 * What every operation works with. An operation is `(deps, auth, input) → result`: it runs the checks and the work
 * behind one endpoint, throws `QuorumError`, and knows nothing of the edge (REST or MCP) that serialises its result.
 */
export interface OperationDeps {
  db: Db;
  client: Client;
  form: Form;
  /** For the estimate's classifier model, the same engines a deliberation's classify step calls. */
  engines: Engines;
  log: Logger;
  /** The deployment's settings, as the entry point validated them at start. */
  config: Config;
  /** Seals and opens what is kept secret at rest (provider keys, webhook secrets), with the entry point's master key. */
  box: SecretBox;
}

/** What an operation that only reads and writes Postgres needs (the console's and the CLI's account pages and commands). */
export type StoreDeps = Pick<OperationDeps, 'db'>;
