// db/: Postgres through knex: the pool (here), migrations/, and the repositories every write and read goes through.
import knex, { type Knex } from 'knex';
import pg from 'pg';
import fs from 'node:fs';
import path from 'node:path';
import { compiled } from '../infra/paths';

// bigint columns hold micro-dollars; keep them exact as JS bigint rather than strings or lossy numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (v: string) => BigInt(v));

export type Db = Knex;

const MIGRATIONS_DIR = path.join(__dirname, 'migrations');

/**
 * The migrations of whichever runtime this is (`.ts` under tsx, `.js` compiled), always recorded under their
 * source name, so a database migrated by one runtime is current for the other.
 */
const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: () =>
    Promise.resolve(
      fs
        .readdirSync(MIGRATIONS_DIR)
        .filter((f) => f.endsWith(compiled ? '.js' : '.ts') && !f.endsWith('.d.ts'))
        .sort(),
    ),
  getMigrationName: (file) => file.replace(/\.js$/, '.ts'),
  // require, not import(): the CLI registers tsx for CommonJS only, and our migrations compile to CommonJS.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  getMigration: (file) => Promise.resolve(require(path.join(MIGRATIONS_DIR, file)) as Knex.Migration),
};

/**
 * Bounds for a process that answers requests (the API): a stalled Postgres (paused, not down) gets no answer from
 * the server, so only client-side timers notice; the request is answered 503 within seconds and the pool recovers
 * by itself once the server answers again (node-postgres completes the abandoned query and moves on).
 */
export const REQUEST_PATH_DB_TIMEOUTS = { queryMs: 4_000, acquireMs: 3_000, connectMs: 3_000 } as const;

export interface DbTimeouts {
  /** Client-side deadline of one query; none by default (a worker's settle may wait for a database to return). */
  queryMs?: number;
  acquireMs?: number;
  connectMs?: number;
}

export function createDb(url: string, poolMax = 10, timeouts: DbTimeouts = {}): Db {
  return knex({
    client: 'pg',
    connection: {
      connectionString: url,
      application_name: 'quorum',
      query_timeout: timeouts.queryMs,
      connectionTimeoutMillis: timeouts.connectMs,
    },
    pool: { min: 0, max: poolMax },
    // An unreachable database answers 503 within seconds rather than holding requests for knex's default minute.
    acquireConnectionTimeout: timeouts.acquireMs ?? 10_000,
    migrations: { migrationSource, tableName: 'knex_migrations' },
  });
}

/** Brings the schema to the latest migration; safe to run from several processes at once (knex takes a lock). */
export async function migrateLatest(db: Db): Promise<string[]> {
  const [, applied] = (await db.migrate.latest()) as [number, string[]];
  return applied;
}
