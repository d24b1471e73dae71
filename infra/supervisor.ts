import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { createDb } from '../db/knex';
import { prepareDatabase } from '../db/prepare';
import { seedDemoOrganisation } from '../db/seed';
import { startTrialTimer } from '../starters/trial-credit';
import { loadConfig, SHUTDOWN_MARGIN_MS } from './config';
import { describeExit, forkEntryPoint } from './entry-point';
import { dataDir } from './paths';
import { startEmbeddedPostgres, type EmbeddedPg } from './postgres';
import { CrashHistory, RESTART_POLICY } from './restart-policy';
import { removeStackFile, writeStackFile } from './stack-file';
import { ensureLocalModel, LOCAL_ENGINE_ID, localEnginesFile, startLocalModel } from './local-model';
import { resolveTemporalBinary } from './temporal-binary';
import { spawnDevServer, waitForTemporal } from './temporal-server';

/**
 * `npm start`: Temporal, Postgres, migrations, seed data (the demo organisation and its trial timer), worker, API —
 * in that order, each awaited — then the URLs. A worker or API that dies is restarted with backoff (RESTART_POLICY);
 * one that keeps dying, or Temporal dying, stops the stack with exit code 1. SIGINT/SIGTERM stop every child this
 * process started, in reverse order.
 */
const say = (line: string): void => void process.stdout.write(`[quorum] ${line}\n`);

interface Stoppable {
  name: string;
  stop(): Promise<void>;
  /** At once (a second Ctrl-C): no drain. */
  kill(): void;
}

const started: Stoppable[] = [];
let shuttingDown = false;

/** SIGTERM, then SIGKILL if the child is still there after `timeoutMs`. */
function terminate(child: ChildProcess, timeoutMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  child.kill('SIGTERM');
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** A child the stack cannot do without (the Temporal dev server): its death stops the stack. */
function track(name: string, child: ChildProcess): void {
  started.push({ name, stop: () => terminate(child, 15_000), kill: () => child.kill('SIGKILL') });
  child.once('exit', (code, signal) => {
    if (!shuttingDown) {
      say(`${name} exited unexpectedly (${describeExit(code, signal)}); stopping the stack`);
      void shutdown(1);
    }
  });
}

/**
 * A worker or API process, kept running: after its first start, each exit the supervisor did not ask for is a
 * crash, answered by a restart after the policy's delay, or by stopping the stack when it crashes too often.
 * Resolves when the first process is ready; a first process that dies before that fails the start.
 */
async function supervise(name: string, module: string, env: NodeJS.ProcessEnv, stopTimeoutMs: number): Promise<void> {
  const crashes = new CrashHistory();
  let current: ChildProcess | undefined;
  let restart: NodeJS.Timeout | undefined;
  let supervising = false;
  started.push({
    name,
    stop: async () => {
      clearTimeout(restart);
      if (current) await terminate(current, stopTimeoutMs);
    },
    kill: () => current?.kill('SIGKILL'),
  });

  const launch = (): Promise<void> => {
    const { child, ready } = forkEntryPoint(module, env, 'inherit');
    const launchedAt = Date.now();
    current = child;
    child.once('exit', (code, signal) => {
      if (shuttingDown || !supervising) return;
      const how = describeExit(code, signal);
      const verdict = crashes.record(Date.now(), Date.now() - launchedAt);
      if (!verdict.restart) {
        say(
          `${name} crashed ${verdict.crashesInWindow} times within ${RESTART_POLICY.windowMs / 1000} s (last: ${how}); giving up, stopping the stack`,
        );
        void shutdown(1);
        return;
      }
      say(
        `${name} exited unexpectedly (${how}); restarting it in ${verdict.delayMs / 1000} s (crash ${verdict.crashesInWindow} of ${RESTART_POLICY.maxCrashes} allowed within ${RESTART_POLICY.windowMs / 1000} s)`,
      );
      restart = setTimeout(() => {
        if (shuttingDown) return;
        launch().then(
          () => say(`${name} restarted and ready (pid ${String(current?.pid)})`),
          // Its exit handler above has already counted this crash.
          () => undefined,
        );
      }, verdict.delayMs);
    });
    return ready;
  };
  await launch();
  supervising = true;
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

/**
 * QUORUM_LOCAL_MODEL=on: the real local model, its engines file, and the setting that seats it where no provider key
 * could run the design (instead of a simulated engine). Returns the environment the worker and API need for it.
 */
async function startLocalDemoModel(): Promise<NodeJS.ProcessEnv> {
  if (process.env.QUORUM_ENGINES_FILE)
    throw new Error(
      `QUORUM_LOCAL_MODEL=on writes its own engines file; with QUORUM_ENGINES_FILE set, declare the local model in yours instead ` +
        `(start it with \`node --import tsx infra/local-model.ts\`; the entry is in docs/engines.md) and set QUORUM_STAND_IN=${LOCAL_ENGINE_ID}`,
    );
  // Both cores: while it generates, the rest of the stack waits on it.
  const server = await startLocalModel(ensureLocalModel(say), { detached: true, threads: 2 });
  track('local model', server.process);
  const file = path.join(dataDir, 'local-engines.json');
  fs.writeFileSync(file, JSON.stringify(localEnginesFile(server.baseUrl), null, 2));
  say(`local model ready at ${server.baseUrl} (${LOCAL_ENGINE_ID}: SmolLM2-135M-Instruct on llama.cpp)`);
  return { QUORUM_ENGINES_FILE: file, QUORUM_STAND_IN: LOCAL_ENGINE_ID };
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
    // Not a child (pg_ctl runs it): a forced stop leaves it to the next start, which finds and stops it.
    started.push({ name: 'postgres', stop: () => pg.stop(), kill: () => undefined });
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
    ...(config.QUORUM_LOCAL_MODEL === 'on' ? await startLocalDemoModel() : {}),
  };
  const childStopTimeoutMs = config.QUORUM_SHUTDOWN_GRACE_MS + SHUTDOWN_MARGIN_MS;
  await supervise('worker', 'worker/main', env, childStopTimeoutMs);
  await supervise('api', 'api/main', env, childStopTimeoutMs);
  const apiUrl = `http://127.0.0.1:${config.PORT}`;
  await waitForHealth(`${apiUrl}/healthz`);
  writeStackFile({ databaseUrl, temporalAddress, namespace: config.TEMPORAL_NAMESPACE, apiUrl, pid: process.pid });

  say(`ready in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  say(`API          ${apiUrl}  (health: ${apiUrl}/healthz)`);
  say(`console      ${apiUrl}/console  (sign up to build modes, issue keys, read receipts and runs)`);
  const workerMetrics = config.QUORUM_WORKER_METRICS_PORT ? `, worker http://127.0.0.1:${config.QUORUM_WORKER_METRICS_PORT}/metrics` : '';
  say(`metrics      API ${apiUrl}/metrics${workerMetrics}`);
  if (temporalUi) say(`Temporal UI  ${temporalUi}`);
  if (demo.apiKey) say(`demo organisation ${demo.orgId}; its live API key, shown this once: ${demo.apiKey}`);
  say('Ctrl-C stops everything.');
}

// The children run in process groups of their own, so a terminal's Ctrl-C (or hang-up) reaches this process alone,
// which stops them in order: the API drains while the worker and Temporal still serve its calls in flight. A second
// signal stops everything at once.
let signals = 0;
const onSignal = (signal: NodeJS.Signals): void => {
  signals += 1;
  if (signals === 1) {
    void shutdown(0);
    return;
  }
  say(`${signal} again: stopping at once`);
  for (const part of started) part.kill();
  removeStackFile();
  process.exit(1);
};
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, onSignal);
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
