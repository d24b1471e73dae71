import { createDb, REQUEST_PATH_DB_TIMEOUTS, type Db } from '../db/knex';
import { prepareDatabase } from '../db/prepare';

/**
 * Opens the database the operations work on, so an entry point (the API, the CLI) never reaches into `db/` itself:
 * the API's pool answers on the request path's timeouts; the CLI's small pool is migrated and seeded first when the
 * database may be fresh (its own embedded Postgres).
 */
export async function openDatabase(
  databaseUrl: string,
  opts: { poolMax: number; use: 'request_path' | 'command'; prepare?: boolean },
): Promise<{ db: Db; close(): Promise<void> }> {
  const db =
    opts.use === 'request_path' ? createDb(databaseUrl, opts.poolMax, REQUEST_PATH_DB_TIMEOUTS) : createDb(databaseUrl, opts.poolMax);
  if (opts.prepare)
    await prepareDatabase(db).catch(async (err: unknown) => {
      await db.destroy();
      throw err;
    });
  return { db, close: () => db.destroy() };
}
