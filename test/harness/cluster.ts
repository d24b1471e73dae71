import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, portFree } from '../../infra/free-port';
import { readStackFile } from '../../infra/stack-file';
import { ensureGoProgram } from '../../stack/go-binary';
import { TEMPORAL_SERVER, TEMPORAL_UI_SERVER, temporalPorts } from '../../stack/temporal-cluster';
import { buildOnce } from './build';
import { exitOf, listProcesses } from './faults';
import { startSupervisor } from './supervisor';
import { loadConfig } from '../../infra/config';
import { toolEnv } from '../../stack/tool-env';

/**
 * `npm run start:cluster` as an operator runs it (built, then the compiled supervisor with `--cluster`), its state in a scratch
 * folder and every port free, for the tests and benches that run the production topology: the Temporal server on
 * Postgres, its UI, Quorum's Postgres, N workers and M APIs, each its own process.
 */
export interface RunningCluster {
  child: ChildProcess;
  output(): string;
  dataDir: string;
  apiUrls: string[];
  temporalAddress: string;
  databaseUrl: string;
  /** The demo organisation's live key, printed on the first start. */
  demoKey: string;
  /** Process ids of the supervisor's children now. */
  workers(): number[];
  apis(): Array<{ pid: number; url: string }>;
  temporalServer(): number | undefined;
  /** Every process of the cluster (supervisor, children, both Postgres servers with their backends) now. */
  processes(): number[];
  /** Ctrl-C: the supervisor stops everything; resolves with its exit code once nothing of it is left. */
  stop(): Promise<number | null>;
}

/** A frontend port whose whole layout (stack/temporal-cluster.ts temporalPorts) is free; below 32768 + 300 (membership ports are smallints). */
async function freeTemporalPort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const frontend = 20_000 + Math.floor(Math.random() * 12_000);
    const ports = Object.values(temporalPorts(frontend)).map((v) => Number(v.split(':').pop()));
    if ((await Promise.all(ports.map(portFree))).every(Boolean)) return frontend;
  }
  throw new Error('no free port layout for the Temporal server');
}

/** `count` consecutive free ports (the APIs listen on PORT, PORT+1, …). */
async function freeRun(count: number): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const first = await freePort();
    const run = Array.from({ length: count }, (_, i) => first + i);
    if (run.every((p) => p < 65_536) && (await Promise.all(run.map(portFree))).every(Boolean)) return first;
  }
  throw new Error(`no ${count} consecutive free ports`);
}

export async function startCluster(o: {
  workers: number;
  apis: number;
  env?: NodeJS.ProcessEnv;
  readyTimeoutMs?: number;
}): Promise<RunningCluster> {
  buildOnce();
  // Built here, once per user, rather than inside the supervisor's start, whose readiness the wait below times.
  for (const program of [TEMPORAL_SERVER, TEMPORAL_UI_SERVER])
    ensureGoProgram(program, toolEnv(loadConfig(), process.env), (line) => console.log(`      ${line}`));
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-cluster-'));
  // Postgres runs as the `postgres` user when we are root: it must be able to enter the folder.
  fs.chmodSync(dataDir, 0o755);
  const port = await freeRun(o.apis);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    QUORUM_DATA_DIR: dataDir,
    PORT: String(port),
    TEMPORAL_PORT: String(await freeTemporalPort()),
    TEMPORAL_UI_PORT: String(await freePort()),
    QUORUM_WORKER_METRICS_PORT: '0',
    QUORUM_CLUSTER_WORKERS: String(o.workers),
    QUORUM_CLUSTER_APIS: String(o.apis),
    ...o.env,
  };
  delete env.DATABASE_URL;
  delete env.TEMPORAL_ADDRESS;
  const { child, output } = await startSupervisor(env, ['--cluster'], o.readyTimeoutMs ?? 180_000);
  const out = output();
  const info = readStackFile(path.join(dataDir, 'stack.json'));
  if (!info) throw new Error(`no stack file in ${dataDir}:\n${out}`);
  const demoKey = /its live API key, shown this once: (\S+)/.exec(out)?.[1];
  if (!demoKey) throw new Error(`no demo key printed:\n${out}`);

  const children = (): ReturnType<typeof listProcesses> => listProcesses().filter((p) => p.ppid === child.pid);
  const portOf = (pid: number): string | undefined => /(?:^|\0)PORT=(\d+)/.exec(fs.readFileSync(`/proc/${pid}/environ`, 'utf8'))?.[1];
  return {
    child,
    output,
    dataDir,
    apiUrls: info.apiUrls ?? [info.apiUrl],
    temporalAddress: info.temporalAddress,
    databaseUrl: info.databaseUrl,
    demoKey,
    workers: () =>
      children()
        .filter((p) => p.cmd.includes('dist/worker/main.js'))
        .map((p) => p.pid),
    apis: () =>
      children()
        .filter((p) => p.cmd.includes('dist/api/main.js'))
        .map((p) => ({ pid: p.pid, url: `http://127.0.0.1:${portOf(p.pid) ?? '?'}` })),
    temporalServer: () => children().find((p) => p.cmd.includes(path.join(dataDir, 'cluster', 'temporal')))?.pid,
    processes: () => {
      const all = listProcesses();
      // The Postgres servers are started by pg_ctl (not our children): found by their data folders, with their backends.
      const roots = new Set([child.pid, ...all.filter((p) => p.cmd.includes(dataDir)).map((p) => p.pid)]);
      const tree = new Set<number>();
      const add = (pid: number): void => {
        if (tree.has(pid)) return;
        tree.add(pid);
        for (const p of all) if (p.ppid === pid) add(p.pid);
      };
      for (const pid of roots) if (pid !== undefined) add(pid);
      return [...tree];
    },
    stop: async () => {
      let code = child.exitCode;
      if (child.exitCode === null && child.signalCode === null) {
        const exited = exitOf(child);
        process.kill(-(child.pid ?? 0), 'SIGINT');
        ({ code } = await exited);
      }
      const left = listProcesses().filter((p) => p.cmd.includes(dataDir));
      fs.rmSync(dataDir, { recursive: true, force: true });
      if (left.length > 0) throw new Error(`left running: ${left.map((p) => `${p.pid} ${p.cmd}`).join('; ')}`);
      return code;
    },
  };
}
