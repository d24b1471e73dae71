import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { createDb } from '../db/knex';
import { prepareDatabase } from '../db/prepare';
import { seedDemoOrganisation } from '../db/seed';
import { startTrialTimer } from '../starters/trial-credit';
import { loadConfig } from './config';
import { dataDir, runtimeExecArgv, runtimeModule } from './paths';
import { startEmbeddedPostgres, type EmbeddedPg } from './postgres';
import { removeStackFile, writeStackFile } from './stack-file';
import { resolveTemporalBinary } from './temporal-binary';
import { spawnDevServer, waitForTemporal } from './temporal-server';

/**
 * `npm start`: Temporal, Postgres, migrations, seed data (the demo organisation and its trial timer), worker, API —
 * in that order, each awaited — then the URLs. SIGINT/SIGTERM stop every child this process started, in reverse order.
 */
const say = (line: string): void => void process.stdout.write(`[quorum] ${line}\n`);

interface Stoppable {
  name: string;
  stop(): Promise<void>;
}

const started: Stoppable[] = [];
let shuttingDown = false;

function waitForExit(child: ChildProcess, timeoutMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
    }, timeoutMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

function track(name: string, child: ChildProcess): void {
  started.push({
    name,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await waitForExit(child, 15_000);
    },
  });
  child.once('exit', (code, signal) => {
    if (!shuttingDown) {
      say(`${name} exited unexpectedly (${signal ?? `code ${String(code)}`}); stopping the stack`);
      void shutdown(1);
    }
  });
}

async function shutdown(exitCode: number): Promise<void> {
  if (shuttingDown) return;
  shuttingDown = true;
  say('stopping...');
  for (const part of started.reverse()) {
    try {
      await part.stop();
    } catch (err) {
      say(`could not stop ${part.name}: ${String(err)}`);
    }
  }
  removeStackFile();
  say('stopped');
  process.exit(exitCode);
}

/** A Node child (worker or API), compiled or through tsx as this process runs; resolves when it reports ready over IPC. */
function startNodeChild(name: string, module: string, env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  const child = fork(runtimeModule(module), [], { execArgv: [...runtimeExecArgv], env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  track(name, child);
  return new Promise((resolve, reject) => {
    child.once('message', () => resolve(child));
    child.once('exit', () => reject(new Error(`${name} exited before it was ready`)));
  });
}

async function waitForHealth(url: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url);
      if (res.ok) return;
      last = await res.text();
    } catch (err) {
      last = String(err);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${url} not healthy after ${timeoutMs} ms: ${last}`);
}

async function main(): Promise<void> {
  const config = loadConfig();
  const t0 = Date.now();
  fs.mkdirSync(dataDir, { recursive: true });
  // Postgres (running as its own user) must be able to traverse into .data/.
  fs.chmodSync(dataDir, 0o755);

  let temporalAddress = config.TEMPORAL_ADDRESS;
  let temporalUi: string | undefined;
  if (!temporalAddress) {
    const binary = resolveTemporalBinary(say);
    const server = spawnDevServer({
      binary,
      port: config.TEMPORAL_PORT,
      uiPort: config.TEMPORAL_UI_PORT,
      dbFile: path.join(dataDir, 'temporal.db'),
      namespace: config.TEMPORAL_NAMESPACE,
    });
    server.stdout?.on('data', () => undefined);
    server.stderr?.pipe(process.stderr);
    track('temporal', server);
    temporalAddress = `127.0.0.1:${config.TEMPORAL_PORT}`;
    temporalUi = `http://127.0.0.1:${config.TEMPORAL_UI_PORT}`;
  }
  await waitForTemporal(temporalAddress, config.TEMPORAL_NAMESPACE);
  say(`temporal ready at ${temporalAddress}`);

  let databaseUrl = config.DATABASE_URL;
  if (!databaseUrl) {
    const pg: EmbeddedPg = await startEmbeddedPostgres(path.join(dataDir, 'pg'));
    started.push({ name: 'postgres', stop: () => pg.stop() });
    databaseUrl = pg.url;
  }
  const db = createDb(databaseUrl, 2);
  const { migrations } = await prepareDatabase(db);
  say(`postgres ready; ${migrations.length} migration(s) applied`);
  const demo = await seedDemoOrganisation(db);
  if (demo.trialStartedAt) {
    // A fresh demo organisation gets its 30-day trial timer now (Temporal is up: awaited above).
    const connection = await Connection.connect({ address: temporalAddress });
    try {
      await startTrialTimer(db, new Client({ connection, namespace: config.TEMPORAL_NAMESPACE }), {
        orgId: demo.orgId,
        trialStartedAt: demo.trialStartedAt.toISOString(),
      });
    } finally {
      await connection.close();
    }
  }
  await db.destroy();

  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporalAddress,
    TEMPORAL_NAMESPACE: config.TEMPORAL_NAMESPACE,
  };
  await startNodeChild('worker', 'worker/main', env);
  await startNodeChild('api', 'api/main', env);
  const apiUrl = `http://127.0.0.1:${config.PORT}`;
  await waitForHealth(`${apiUrl}/healthz`);
  writeStackFile({ databaseUrl, temporalAddress, namespace: config.TEMPORAL_NAMESPACE, apiUrl, pid: process.pid });

  say(`ready in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  say(`API          ${apiUrl}  (health: ${apiUrl}/healthz)`);
  if (temporalUi) say(`Temporal UI  ${temporalUi}`);
  if (demo.apiKey) say(`demo organisation ${demo.orgId}; its live API key, shown this once: ${demo.apiKey}`);
  say('Ctrl-C stops everything.');
}

process.once('SIGINT', () => void shutdown(0));
process.once('SIGTERM', () => void shutdown(0));
// If whatever started us dies without passing the signal on, the stack must not outlive it.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) {
    say('parent process ended; stopping the stack');
    void shutdown(0);
  }
}, 1_000).unref();

main().catch((err: unknown) => {
  say(`start failed: ${err instanceof Error ? err.message : String(err)}`);
  void shutdown(1);
});
