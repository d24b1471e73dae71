import type { Client } from '@temporalio/client';
import type { Db } from '../../db/knex';
import type { FormSerialiser } from '../forms';

/** What every `/v1` handler works with. */
export interface RouteDeps {
  db: Db;
  client: Client;
  serialiser: FormSerialiser;
}
