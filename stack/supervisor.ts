import type { ChildProcess } from 'node:child_process';
import { ensureBenchmarkSets } from './benchmark-sets';
import fs from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { createDb } from '../db/knex';
import { prepareDatabase } from '../db/prepare';
import { seedDemoOrganisation, seedLocalDemoMode } from '../db/seed';
import { startTrialTimer } from '../starters/trial-credit';
import { loadConfig, SHUTDOWN_MARGIN_MS, type Config } from '../infra/config';
import { bundleInChild } from '../worker/bundle';
import { CLUSTER_SERVICES, joinClusterEnv } from './cluster-topology';
import { describeExit, forkEntryPoint, type ForkedEntryPoint } from '../infra/entry-point';
import { portFree } from '../infra/free-port';
import { ensureGoProgram } from './go-binary';
import { dataDir } from '../infra/paths';
import { startEmbeddedPostgres, type EmbeddedPg } from '../infra/postgres';
import { CrashHistory, RESTART_POLICY } from './restart-policy';
import { removeStackFile, writeStackFile } from '../infra/stack-file';
import { ensureLocalModel, LOCAL_ENGINE_ID, localEnginesFile, startLocalModel } from './local-model';
import { resolveTemporalBinary } from './temporal-binary';
import { toolEnv, type ToolEnv } from './tool-env';
import {
  DYNAMIC_CONFIG_FILE,
  ensureNamespace,
  ensureTemporalSchema,
  spawnTemporalServer,
  spawnTemporalUi,
  temporalPorts,
  TEMPORAL_SERVER,
  TEMPORAL_TOPOLOGY,
  TEMPORAL_UI_SERVER,
  type TemporalServerSettings,
} from './temporal-cluster';
import { temporalConnectOptions } from '../infra/temporal-connection';
import { spawnDevServer, waitForTemporal } from './temporal-server';

/**
 * `npm start`: Temporal, Postgres, migrations, seed data (the demo organisation and its trial timer), then the API with
 * its worker in one process (QUORUM_ROLE=all) — in that order, each awaited — then the URLs. A worker or API that dies
 * is restarted with backoff (RESTART_POLICY);
 * one that keeps dying, or Temporal dying, stops the stack with exit code 1. SIGINT/SIGTERM stop every child this
 * process started, in reverse order.
 *
 * `npm run start:cluster` (`--cluster`): the production topology of DESIGN §1 and docker-compose.yml on one machine:
 * the Temporal server (not the dev server) on a Postgres of its own, its Web UI, Quorum's Postgres, and
 * QUORUM_CLUSTER_WORKERS workers and QUORUM_CLUSTER_APIS APIs, each its own process; the APIs listen on their own
 * ports (PORT, PORT+1, …) behind nothing, as a load balancer of the operator's would reach them. Every process, the
 * Temporal server and UI included, is restarted when it crashes, as an orchestrator would. SIGUSR2 is a rolling deploy
 * of the workers: the workflow bundle rebuilt from `dist/`, then each worker in turn replaced (the new one ready
 * before the old one drains).
 */
const clusterMode = process.argv.includes('--cluster');
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

/** A process under supervision: which one runs now, and a replacement on demand. */
interface Supervised {
  name: string;
  pid(): number | undefined;
  /** A new process started and ready, then the old one stopped (its drain): no moment without one. */
  replace(): Promise<void>;
}

/**
 * A process kept running (a worker, an API; in the cluster also the Temporal server and its UI): after its first
 * start, each exit the supervisor did not ask for is a crash, answered by a restart after the policy's delay, or by
 * stopping the stack when it crashes too often. Resolves when the first process is ready; a first process that dies
 * before that fails the start.
 */
async function supervise(name: string, launchOne: () => ForkedEntryPoint, stopTimeoutMs: number): Promise<Supervised> {
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
    const { child, ready } = launchOne();
    const launchedAt = Date.now();
    current = child;
    child.once('exit', (code, signal) => {
      // A process replaced on purpose is not a crash.
      if (shuttingDown || !supervising || child !== current) return;
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
  return {
    name,
    pid: () => current?.pid,
    replace: async () => {
      const old = current;
      await launch();
      if (old) await terminate(old, stopTimeoutMs);
    },
  };
}

function withoutTemporalClientSettings(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([k]) => k !== 'TEMPORAL_API_KEY' && !k.startsWith('TEMPORAL_TLS')));
}

/** A child's output appended to `file`. */
function logTo(child: ChildProcess, file: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const out = fs.createWriteStream(file, { flags: 'a' });
  child.stdout?.pipe(out, { end: false });
  child.stderr?.pipe(out, { end: false });
}

/** A spawned program as an entry point: ready when `whenReady` resolves, failed when it exits first. */
function spawned(child: ChildProcess, name: string, whenReady: () => Promise<void>): ForkedEntryPoint {
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code, signal) => reject(new Error(`${name} exited (${describeExit(code, signal)}) before it was ready`))),
  );
  return { child, ready: Promise.race([whenReady(), exited]) };
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

/** Where the launcher finds and installs its tools: this entry point's configuration and environment. */
function launcherTools(config: Config): ToolEnv {
  return toolEnv(config, process.env);
}

/**
 * The real benchmark sets for runs (stack/benchmark-sets.ts), installed once per user; a stack that cannot install
 * them (no registry) still starts, its runs on the generated questions, and says so.
 */
function benchmarkSetsEnv(config: Config): NodeJS.ProcessEnv {
  if (config.QUORUM_BENCHMARK_SETS_DIR !== undefined) return {};
  try {
    return { QUORUM_BENCHMARK_SETS_DIR: ensureBenchmarkSets(launcherTools(config), say) };
  } catch (err) {
    say(`real benchmark sets not installed (${(err as Error).message.split('\n')[0]}): runs draw generated questions only`);
    return {};
  }
}

/**
 * QUORUM_LOCAL_MODEL=on: the real local model, its engines file, and the setting that seats it where no provider key
 * could run the design (instead of a simulated engine). Returns the environment the worker and API need for it.
 */
async function startLocalDemoModel(config: Config): Promise<NodeJS.ProcessEnv> {
  if (config.QUORUM_ENGINES_FILE)
    throw new Error(
      `QUORUM_LOCAL_MODEL=on writes its own engines file; with QUORUM_ENGINES_FILE set, declare the local model in yours instead ` +
        `(start it with \`node --import tsx stack/local-model.ts\`; the entry is in docs/engines.md) and set QUORUM_STAND_IN=${LOCAL_ENGINE_ID}`,
    );
  // Both cores: while it generates, the rest of the stack waits on it.
  const server = await startLocalModel(ensureLocalModel(launcherTools(config), say), { detached: true, threads: 2 });
  track('local model', server.process);
  const file = path.join(dataDir, 'local-engines.json');
  fs.writeFileSync(file, JSON.stringify(localEnginesFile(server.baseUrl), null, 2));
  say(`local model ready at ${server.baseUrl} (${LOCAL_ENGINE_ID}: SmolLM2-135M-Instruct on llama.cpp)`);
  return { QUORUM_ENGINES_FILE: file, QUORUM_STAND_IN: LOCAL_ENGINE_ID };
}

/** An embedded Postgres under `dir`, stopped with the stack. */
async function startPostgres(name: string, dir: string): Promise<EmbeddedPg> {
  const pg = await startEmbeddedPostgres(dir);
  // Not a child (pg_ctl runs it): a forced stop leaves it to the next start, which finds and stops it.
  started.push({ name, stop: () => pg.stop(), kill: () => undefined });
  return pg;
}

interface StartedTemporal {
  address: string;
  ui: string;
  /** The server's own Prometheus endpoint (the cluster's; the dev server serves none by default). */
  metrics?: string;
}

/** `npm start`'s Temporal: the CLI's dev server on SQLite, with its UI. */
async function startDevTemporal(config: Config): Promise<StartedTemporal> {
  const server = spawnDevServer({
    binary: resolveTemporalBinary(launcherTools(config), say),
    port: config.TEMPORAL_PORT,
    uiPort: config.TEMPORAL_UI_PORT,
    dbFile: path.join(dataDir, 'temporal.db'),
    namespace: config.TEMPORAL_NAMESPACE,
  });
  server.stdout?.on('data', () => undefined);
  server.stderr?.pipe(process.stderr);
  track('temporal', server);
  return { address: `127.0.0.1:${config.TEMPORAL_PORT}`, ui: `http://127.0.0.1:${config.TEMPORAL_UI_PORT}` };
}

/** QUORUM_CLUSTER_HISTORY_SHARDS and QUORUM_CLUSTER_DYNAMIC_CONFIG_FILE over the image's settings (the bench's levers). */
function clusterLevers(config: Config): Partial<TemporalServerSettings> {
  const dynamicConfig = config.QUORUM_CLUSTER_DYNAMIC_CONFIG_FILE;
  if (dynamicConfig !== undefined && !fs.existsSync(dynamicConfig))
    throw new Error(`QUORUM_CLUSTER_DYNAMIC_CONFIG_FILE: no such file: ${dynamicConfig}`);
  return {
    ...(config.QUORUM_CLUSTER_HISTORY_SHARDS === undefined ? {} : { NUM_HISTORY_SHARDS: String(config.QUORUM_CLUSTER_HISTORY_SHARDS) }),
    ...(dynamicConfig === undefined ? {} : { DYNAMIC_CONFIG_FILE_PATH: dynamicConfig }),
  };
}

/**
 * The cluster's Temporal: its Postgres (databases `temporal` and `temporal_visibility`, schema set up and upgraded),
 * the server on it, our namespace and search attributes, and the Web UI; state under `.data/cluster/`.
 */
async function startClusterTemporal(config: Config, dir: string, stopTimeoutMs: number): Promise<StartedTemporal> {
  const tools = launcherTools(config);
  const [serverBin, uiBin] = [ensureGoProgram(TEMPORAL_SERVER, tools, say), ensureGoProgram(TEMPORAL_UI_SERVER, tools, say)];
  const pg = new URL((await startPostgres(CLUSTER_SERVICES.temporalPostgres, path.join(dir, 'temporal-pg'))).url);
  const ports = temporalPorts(config.TEMPORAL_PORT);
  for (const [name, value] of Object.entries(ports)) {
    const port = Number(value.split(':').pop());
    if (!(await portFree(port))) throw new Error(`port ${port} (the Temporal server's ${name}, laid out from TEMPORAL_PORT) is in use`);
  }
  const settings: TemporalServerSettings = {
    ...TEMPORAL_TOPOLOGY,
    POSTGRES_SEEDS: pg.hostname,
    DB_PORT: pg.port,
    POSTGRES_USER: decodeURIComponent(pg.username),
    POSTGRES_PWD: decodeURIComponent(pg.password),
    DYNAMIC_CONFIG_FILE_PATH: DYNAMIC_CONFIG_FILE,
    BIND_ON_IP: '127.0.0.1',
    TEMPORAL_BROADCAST_ADDRESS: '127.0.0.1',
    ...ports,
    LOG_LEVEL: 'error',
    ...clusterLevers(config),
  };
  await ensureTemporalSchema(path.join(serverBin, 'sql'), settings, tools.inherited);
  const address = `127.0.0.1:${config.TEMPORAL_PORT}`;
  // Its errors (LOG_LEVEL) go to a file: a shutdown alone logs dozens, each with a stack trace.
  const serverLog = path.join(dir, 'temporal', 'server.log');
  await supervise(
    CLUSTER_SERVICES.temporal,
    () => {
      const child = spawnTemporalServer(path.join(serverBin, 'server'), path.join(dir, 'temporal'), settings);
      logTo(child, serverLog);
      // `temporal-system` exists on every server: the frontend answers for it before our namespace is registered.
      return spawned(child, CLUSTER_SERVICES.temporal, () => waitForTemporal(address, 'temporal-system'));
    },
    stopTimeoutMs,
  );
  await ensureNamespace(address, config.TEMPORAL_NAMESPACE);
  const ui = `http://127.0.0.1:${config.TEMPORAL_UI_PORT}`;
  await supervise(
    CLUSTER_SERVICES.temporalUi,
    () => {
      const child = spawnTemporalUi(path.join(uiBin, 'server'), path.join(dir, 'ui'), {
        temporalAddress: address,
        port: config.TEMPORAL_UI_PORT,
        namespace: config.TEMPORAL_NAMESPACE,
      });
      logTo(child, path.join(dir, 'ui', 'server.log'));
      return spawned(child, CLUSTER_SERVICES.temporalUi, () => waitForHealth(ui));
    },
    stopTimeoutMs,
  );
  say(`temporal server log: ${serverLog}`);
  return { address, ui, metrics: `http://${ports.PROMETHEUS_ENDPOINT}/metrics` };
}

async function main(): Promise<void> {
  const config = loadConfig();
  const t0 = Date.now();
  fs.mkdirSync(dataDir, { recursive: true });
  // Postgres (running as its own user) must be able to traverse into .data/.
  fs.chmodSync(dataDir, 0o755);
  // The cluster keeps its state apart: the dev server's workflows are not the cluster's.
  const stateDir = clusterMode ? path.join(dataDir, 'cluster') : dataDir;
  fs.mkdirSync(stateDir, { recursive: true, mode: 0o755 });
  const childStopTimeoutMs = config.QUORUM_SHUTDOWN_GRACE_MS + SHUTDOWN_MARGIN_MS;

  const temporal: StartedTemporal | undefined = config.TEMPORAL_ADDRESS
    ? undefined
    : clusterMode
      ? await startClusterTemporal(config, stateDir, childStopTimeoutMs)
      : await startDevTemporal(config);
  // An existing cluster is reached with the operator's TLS and API key settings; the servers started here are plain.
  const temporalTarget = temporal ? { address: temporal.address } : temporalConnectOptions(config);
  const temporalAddress = temporalTarget.address;
  await waitForTemporal(temporalTarget, config.TEMPORAL_NAMESPACE);
  say(`temporal ready at ${temporalAddress}${temporal?.metrics ? ` (Temporal server ${TEMPORAL_SERVER.version} on Postgres)` : ''}`);

  const databaseUrl = config.DATABASE_URL ?? (await startPostgres(CLUSTER_SERVICES.postgres, path.join(stateDir, 'pg'))).url;
  const db = createDb(databaseUrl, 2);
  const { migrations } = await prepareDatabase(db);
  say(`postgres ready; ${migrations.length} migration(s) applied`);
  const demo = await seedDemoOrganisation(db);
  if (config.QUORUM_LOCAL_MODEL === 'on') await seedLocalDemoMode(db, LOCAL_ENGINE_ID);
  if (demo.trialStartedAt) {
    // A fresh demo organisation gets its 30-day trial timer now (Temporal is up: awaited above).
    const connection = await Connection.connect(temporalTarget);
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
    // A shell's settings for some remote cluster would have our children try TLS on the plain server started here.
    ...(temporal ? withoutTemporalClientSettings(process.env) : process.env),
    ...joinClusterEnv({ databaseUrl, temporalAddress, namespace: config.TEMPORAL_NAMESPACE }),
    ...(config.QUORUM_LOCAL_MODEL === 'on' ? await startLocalDemoModel(config) : {}),
    ...benchmarkSetsEnv(config),
  };
  // One machine, one process: `npm start`'s API runs the worker too (QUORUM_ROLE=all), so its starts are eager and
  // one Node process is resident instead of two. The cluster keeps them apart, as production does.
  const workerCount = clusterMode ? config.QUORUM_CLUSTER_WORKERS : 0;
  const apiCount = clusterMode ? config.QUORUM_CLUSTER_APIS : 1;
  const numbered = (name: string, i: number, count: number): string => (count === 1 ? name : `${name} ${i + 1}`);
  // Bundled once for every worker (each would otherwise run webpack at its start); rebuilt by a rolling deploy.
  let bundle = clusterMode ? (config.QUORUM_WORKFLOW_BUNDLE ?? bundleInChild()) : config.QUORUM_WORKFLOW_BUNDLE;
  const metricsPort = (i: number): number => (config.QUORUM_WORKER_METRICS_PORT ? config.QUORUM_WORKER_METRICS_PORT + i : 0);
  const workers: Supervised[] = [];
  for (let i = 0; i < workerCount; i++)
    workers.push(
      await supervise(
        numbered(CLUSTER_SERVICES.worker, i, workerCount),
        () =>
          forkEntryPoint(
            'worker/main',
            { ...env, QUORUM_WORKER_METRICS_PORT: String(metricsPort(i)), ...(bundle ? { QUORUM_WORKFLOW_BUNDLE: bundle } : {}) },
            'inherit',
          ),
        childStopTimeoutMs,
      ),
    );
  const apiUrls = Array.from({ length: apiCount }, (_, i) => `http://127.0.0.1:${config.PORT + i}`);
  for (let i = 0; i < apiCount; i++)
    await supervise(
      numbered(CLUSTER_SERVICES.api, i, apiCount),
      () =>
        forkEntryPoint(
          'api/main',
          clusterMode
            ? { ...env, PORT: String(config.PORT + i) }
            : { ...env, PORT: String(config.PORT), QUORUM_ROLE: 'all', QUORUM_WORKER_METRICS_PORT: String(metricsPort(0)) },
          'inherit',
        ),
      childStopTimeoutMs,
    );
  for (const url of apiUrls) await waitForHealth(`${url}/healthz`);
  const [apiUrl = ''] = apiUrls;
  writeStackFile({ databaseUrl, temporalAddress, namespace: config.TEMPORAL_NAMESPACE, apiUrl, apiUrls, pid: process.pid });

  if (clusterMode)
    process.on('SIGUSR2', () => {
      void (async () => {
        say('SIGUSR2: rolling deploy of the workers (bundle rebuilt from dist/)');
        const previous = bundle;
        bundle = bundleInChild();
        for (const worker of workers) {
          await worker.replace();
          say(`${worker.name} replaced (pid ${String(worker.pid())})`);
        }
        if (previous && previous !== config.QUORUM_WORKFLOW_BUNDLE) fs.rmSync(path.dirname(previous), { recursive: true, force: true });
        say('rolling deploy done');
      })().catch((err: unknown) => say(`rolling deploy failed: ${err instanceof Error ? err.message : String(err)}`));
    });

  say(`ready in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  for (const url of apiUrls) say(`API          ${url}  (health: ${url}/healthz)`);
  say(`console      ${apiUrl}/console  (sign up to build modes, issue keys, read receipts and runs)`);
  const workerMetrics = !config.QUORUM_WORKER_METRICS_PORT
    ? ''
    : clusterMode
      ? workers.map((w, i) => `, ${w.name} http://127.0.0.1:${metricsPort(i)}/metrics`).join('')
      : `, its worker http://127.0.0.1:${metricsPort(0)}/metrics`;
  say(`metrics      ${apiUrls.map((url, i) => `${numbered('API', i, apiCount)} ${url}/metrics`).join(', ')}${workerMetrics}`);
  if (temporal?.metrics) say(`             Temporal server ${temporal.metrics}`);
  if (temporal) say(`Temporal UI  ${temporal.ui}`);
  if (clusterMode) say(`workers      ${workerCount} (kill -USR2 ${process.pid}: rolling deploy of the workers)`);
  if (demo.apiKey) say(`demo organisation ${demo.orgId}; its live API key, shown this once: ${demo.apiKey}`);
  say('Ctrl-C stops everything.');
}

// The children run in process groups of their own, so a terminal's Ctrl-C (or hang-up) reaches this process alone,
// which stops them in order: the API drains while the worker and Temporal still serve its calls in flight. A second
// signal stops everything at once. Under `npm start` one Ctrl-C comes twice: the terminal signals npm's group, this
// process included, and npm passes its own copy on at once; a repeat that close is that same press.
const SAME_PRESS_MS = 1_000;
let firstSignalAt: number | undefined;
const onSignal = (signal: NodeJS.Signals): void => {
  if (firstSignalAt === undefined) {
    firstSignalAt = Date.now();
    void shutdown(0);
    return;
  }
  if (Date.now() - firstSignalAt < SAME_PRESS_MS) return;
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
