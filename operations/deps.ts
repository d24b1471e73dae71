// operations/: the application layer every edge and the CLI call, (deps, principal, input) → result or QuorumError.
import type { Client } from '@temporalio/client';
import type { Db } from '../db/knex';
import type { Form } from '../domain/form';
import type { Engines } from '../engines';
import type { Config } from '../infra/config';
import type { Logger } from '../infra/log';
import type { SecretBox } from '../infra/secret-box';
import type { RunSettings } from './run-settings';

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
  /** How runs are limited and paced in this deployment (built once from the Config, or a test's own). */
  runs: RunSettings;
}

/**
 * `K` of the operations' dependencies, Temporal perhaps unreachable (`client` undefined: the CLI without a running
 * stack): what the operations that then defer their workflow, or read progress from Postgres, take.
 */
export type TemporalOptional<K extends keyof OperationDeps> = Pick<OperationDeps, K> & { client: Client | undefined };

/** What an operation that only reads and writes Postgres needs (the console's and the CLI's account pages and commands). */
export type StoreDeps = Pick<OperationDeps, 'db'>;
