import type { Knex } from 'knex';
import { migrateLatest } from './knex';
import { seedSystemModes } from './repositories/modes';

/** Schema to the latest migration, then the system modes to their current definitions. Safe to run at every start. */
export async function prepareDatabase(db: Knex): Promise<{ migrations: string[] }> {
  const migrations = await migrateLatest(db);
  await seedSystemModes(db);
  return { migrations };
}
