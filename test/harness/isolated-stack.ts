import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { createDb, type Db } from '../../db/knex';
import { prepareDatabase } from '../../db/prepare';
import { freePort } from '../../infra/free-port';
import { startEmbeddedPostgres, type EmbeddedPg } from '../../infra/postgres';
import { spawnDevServer, waitForTemporal } from '../../stack/temporal-server';
import { exitOf, listProcesses } from './faults';
import { stack } from './stack';
import { processEnvFor } from './worker';

/**
 * A Temporal dev server (SQLite file) and a Postgres of their own, for a test that stops, kills and restarts them:
 * the shared stack's cannot be (TestWorkflowEnvironment's server has no file to restart on, and every later test
 * file needs the shared Postgres). Both restart on the same data and port, as after a crash in production.
 */
export interface IsolatedStack {
  db: Db;
  dbUrl: string;
  temporalAddress: string;
  namespace: string;
  client: Client;
  /** For in-process workers (test/stack/deliberation/helpers.ts startProductWorkers). */
  nativeConnection: NativeConnection;
  /** What a product process (the API) needs to join this stack. */
  processEnv(extra?: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
  /** `pg_ctl stop -m fast`: connections are closed, new ones refused. */
  stopPostgres(): Promise<void>;
  startPostgres(): Promise<void>;
  /** The dev server SIGKILLed (a crash: no shutdown of its own). */
  killTemporal(): Promise<void>;
  /** The dev server again, on the same SQLite file and port; resolves once it serves the namespace. */
  startTemporal(): Promise<void>;
  /** Stops everything it started and checks nothing of it is left running. */
  close(): Promise<void>;
}

const NAMESPACE = 'default';

export async function startIsolatedStack(): Promise<IsolatedStack> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-isolated-'));
  // Postgres runs as the `postgres` user when we are root: it must be able to enter the folder.
  fs.chmodSync(dir, 0o755);
  const pgDir = path.join(dir, 'pg');
  const [pgPort, temporalPort, uiPort] = [await freePort(), await freePort(), await freePort()];
  const temporalAddress = `127.0.0.1:${temporalPort}`;
  let pg: EmbeddedPg | undefined;
  let server: ChildProcess | undefined;

  const startTemporal = async (): Promise<void> => {
    server = spawnDevServer({
      binary: stack().temporalBinary,
      port: temporalPort,
      uiPort,
      dbFile: path.join(dir, 'temporal.db'),
      namespace: NAMESPACE,
    });
    // Read and dropped: a full pipe would stall the server.
    server.stdout?.resume();
    server.stderr?.resume();
    await waitForTemporal(temporalAddress, NAMESPACE, 30_000);
  };
  const killTemporal = async (): Promise<void> => {
    const running = server;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    const exit = exitOf(running);
    running.kill('SIGKILL');
    await exit;
  };
  const stopPostgres = async (): Promise<void> => {
    await pg?.stop();
  };

  let started: { dbUrl: string; db: Db; connection: Connection; nativeConnection: NativeConnection };
  try {
    // Postgres first: the Temporal dev server binds ports of its own choosing as it starts, which could take the one
    // picked for Postgres. (A CI run's isolated Postgres once failed to start, its reason lost with its log; a failed
    // start now says it.)
    pg = await startEmbeddedPostgres(pgDir, { port: pgPort });
    await startTemporal();
    const dbUrl = (pg as EmbeddedPg).url;
    const db = createDb(dbUrl, 10);
    await prepareDatabase(db);
    const connection = await Connection.connect({ address: temporalAddress });
    started = { dbUrl, db, connection, nativeConnection: await NativeConnection.connect({ address: temporalAddress }) };
  } catch (err) {
    // A failed start stops what it started: no server outlives the test run.
    await killTemporal();
    await stopPostgres();
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const { dbUrl, db, connection, nativeConnection } = started;

  return {
    db,
    dbUrl,
    temporalAddress,
    namespace: NAMESPACE,
    client: new Client({ connection, namespace: NAMESPACE }),
    nativeConnection,
    processEnv: (extra = {}) => processEnvFor({ dbUrl, temporalAddress, namespace: NAMESPACE }, dir, extra),
    stopPostgres,
    startPostgres: async () => {
      pg = await startEmbeddedPostgres(pgDir, { port: pgPort });
    },
    killTemporal,
    startTemporal,
    close: async () => {
      await Promise.allSettled([db.destroy(), connection.close(), nativeConnection.close()]);
      await killTemporal();
      await stopPostgres();
      const left = listProcesses().filter((p) => p.cmd.includes(dir));
      fs.rmSync(dir, { recursive: true, force: true });
      if (left.length > 0) throw new Error(`left running: ${left.map((p) => `${p.pid} ${p.cmd}`).join('; ')}`);
    },
  };
}
