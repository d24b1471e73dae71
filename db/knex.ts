import knex, { type Knex } from 'knex';
import pg from 'pg';
import path from 'node:path';

// bigint columns hold micro-dollars; keep them exact as JS bigint rather than strings or lossy numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (v: string) => BigInt(v));

export type Db = Knex;

export function createDb(url: string, poolMax = 10): Db {
  return knex({
    client: 'pg',
    connection: { connectionString: url, application_name: 'quorum' },
    pool: { min: 0, max: poolMax },
    // An unreachable database answers 503 within seconds rather than holding requests for knex's default minute.
    acquireConnectionTimeout: 10_000,
    migrations: {
      directory: path.join(__dirname, 'migrations'),
      loadExtensions: ['.ts'],
      tableName: 'knex_migrations',
    },
  });
}

/** Brings the schema to the latest migration; safe to run from several processes at once (knex takes a lock). */
export async function migrateLatest(db: Db): Promise<string[]> {
  const [, applied] = (await db.migrate.latest()) as [number, string[]];
  return applied;
}
