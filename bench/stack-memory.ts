import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../infra/free-port';
import { repoRoot } from '../infra/paths';
import { parseExposition } from '../test/harness/prometheus';
import { pssAmong, treeMemory, type ProcMemory } from './procs';
import { machine, round, writeResults } from './results';

/**
 * DESIGN §13's idle memory target (issue 31 item 3): the whole local stack under 500 MB PSS. Runs the real `npm start`
 * (the npm wrapper, the build, the supervisor and everything it starts) on a data folder and ports of its own, waits
 * for it ready, makes a few calls under the demo key it prints (express and panel, so pools, JITs and the workflow
 * cache are warm), leaves it idle, then reads PSS and RSS of every process of the stack from /proc/<pid>/smaps_rollup,
 * grouped by role, whatever processes the tree has: the npm wrapper (npm and its shells), the supervisor, the Temporal
 * dev server, Postgres (postmaster and backends: pg_ctl runs it, so it is found from its postmaster.pid, not the
 * tree), the worker and API (or one process for both), anything else. PSS splits a shared page (Node's binary, the
 * Postgres shared buffers) among the processes mapping it, so the groups add up to the stack's real footprint; RSS
 * counts such pages in each. Also each Node process's V8 heap from its /metrics. Prints a table, writes
 * bench/results/stack-memory-*.json, stops the stack with Ctrl-C (SIGINT to the process group it started).
 *   The stack's environment is this one's (GOGC, GOMEMLIMIT reach the Temporal dev server; NODE_OPTIONS every Node
 *   process, npm's too; QUORUM_DB_POOL_MAX, QUORUM_MAX_CACHED_WORKFLOWS the worker and API), so a setting is measured
 *   by setting it here. BENCH_MEMORY_IDLE_S: how long it idles before the reading (default 45: past the pools' 30 s idle
 *   timeout, so the stack is read at rest, not just after its last call, when each pooled connection still holds a
 *   Postgres backend of ~8 MB).
 */
const IDLE_S = Number(process.env.BENCH_MEMORY_IDLE_S ?? 45);
const TARGET_PSS_MB = 500;
const READY_TIMEOUT_MS = 300_000;
const STOP_TIMEOUT_MS = 60_000;
/** The settings that change the figures, recorded with them. */
const SETTINGS = [
  'NODE_OPTIONS',
  'MALLOC_ARENA_MAX',
  'GOGC',
  'GOMEMLIMIT',
  'QUORUM_DB_POOL_MAX',
  'QUORUM_MAX_CACHED_WORKFLOWS',
  'QUORUM_ROLE',
];

const mb = (kb: number): number => round(kb / 1024);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface StartedStack {
  npm: ChildProcess;
  output(): string;
  apiUrl: string;
  demoKey: string;
}

/** `npm start` in its own process group, as a terminal runs it; resolves once it prints its last ready line. */
async function startNpm(env: NodeJS.ProcessEnv): Promise<StartedStack> {
  const npm = spawn('npm', ['start'], { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  npm.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  npm.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`npm start not ready in ${READY_TIMEOUT_MS} ms:\n${out}`)), READY_TIMEOUT_MS);
    npm.stdout?.on('data', () => {
      if (/\[quorum\] Ctrl-C stops everything/.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    });
    npm.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`npm start exited (${String(code)}) before ready:\n${out}`));
    });
  });
  const apiUrl = /\[quorum\] API +(http:\/\/\S+)/.exec(out)?.[1];
  const demoKey = /its live API key, shown this once: (\S+)/.exec(out)?.[1];
  if (!apiUrl || !demoKey) throw new Error(`no API URL or demo key in npm start's output:\n${out}`);
  const health = await fetch(`${apiUrl}/healthz`);
  if (!health.ok) throw new Error(`${apiUrl}/healthz answered ${health.status}`);
  return { npm, output: () => out, apiUrl, demoKey };
}

/** A few calls of each lane under the demo key, so the memory read afterwards is that of a stack that has served. */
async function warmUp(s: StartedStack): Promise<number> {
  const calls = [
    ...Array.from({ length: 4 }, () => ({ model: 'QRM:EXPR', content: 'what is the capital of France?' })),
    ...Array.from({ length: 2 }, () => ({ model: 'QRM:PANL', content: 'Why is the sky blue? Compare Rayleigh and Mie scattering.' })),
  ];
  // One at a time: the demo key's plan limits concurrent calls.
  const statuses: number[] = [];
  for (const { model, content } of calls) {
    const res = await fetch(`${s.apiUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.demoKey}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({ model, messages: [{ role: 'user', content }] }),
    });
    await res.arrayBuffer();
    statuses.push(res.status);
  }
  const failed = statuses.filter((status) => status !== 200);
  if (failed.length > 0) throw new Error(`warm-up calls answered ${failed.join(', ')}`);
  return calls.length;
}

/** The environment variable of a process (read as root, or as its owner), if set. */
function environOf(pid: number, name: string): string | undefined {
  try {
    const entry = fs
      .readFileSync(`/proc/${pid}/environ`, 'utf8')
      .split('\0')
      .find((e) => e.startsWith(`${name}=`));
    return entry?.slice(name.length + 1);
  } catch {
    return undefined;
  }
}

/** What a process of the stack is, from its command line: the row it is counted in. */
function roleOf(p: ProcMemory, postgres: ReadonlySet<number>): string {
  if (postgres.has(p.pid)) return 'postgres (postmaster + backends)';
  if (p.comm.startsWith('temporal')) return 'temporal dev server';
  const script = p.args.find((a) => a.endsWith('.js'));
  // npm retitles itself (`npm start`), which rewrites its command line too.
  if (p.comm.startsWith('npm') || p.args[0]?.startsWith('npm') || script?.endsWith('npm-cli.js') || ['sh', 'bash', 'dash'].includes(p.comm))
    return 'npm wrapper (npm + shells)';
  if (script?.endsWith('stack/supervisor.js')) return 'supervisor';
  if (script?.endsWith('worker/main.js')) return 'worker';
  if (script?.endsWith('api/main.js')) {
    const role = environOf(p.pid, 'QUORUM_ROLE');
    return role && role !== 'api' ? `api (QUORUM_ROLE=${role})` : 'api';
  }
  return `other: ${p.comm}`;
}

/** The stack's Postgres: its postmaster (from postmaster.pid in its data folder) and that process's children. */
function postgresRoots(dataDir: string): number[] {
  try {
    const pid = Number(fs.readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? [pid] : [];
  } catch {
    return [];
  }
}

interface Row {
  role: string;
  processes: number;
  /** PSS with pages split only among the stack's processes (as on a machine running the stack alone); the kernel's PSS when unreadable. */
  pssAloneMb: number;
  pssMb: number;
  rssMb: number;
  pssAnonMb: number;
  pssFileMb: number;
  pssShmemMb: number;
}

function rowsOf(procs: readonly ProcMemory[], postgres: ReadonlySet<number>, alone: ReadonlyMap<number, number> | undefined): Row[] {
  const byRole = new Map<string, ProcMemory[]>();
  for (const p of procs) {
    const role = roleOf(p, postgres);
    byRole.set(role, [...(byRole.get(role) ?? []), p]);
  }
  const sum = (ps: readonly ProcMemory[], f: (p: ProcMemory) => number): number => mb(ps.reduce((n, p) => n + f(p), 0));
  return [...byRole.entries()]
    .map(([role, ps]) => ({
      role,
      processes: ps.length,
      pssAloneMb: sum(ps, (p) => alone?.get(p.pid) ?? p.pssKb),
      pssMb: sum(ps, (p) => p.pssKb),
      rssMb: sum(ps, (p) => p.rssKb),
      pssAnonMb: sum(ps, (p) => p.pssAnonKb),
      pssFileMb: sum(ps, (p) => p.pssFileKb),
      pssShmemMb: sum(ps, (p) => p.pssShmemKb),
    }))
    .sort((a, b) => b.pssAloneMb - a.pssAloneMb);
}

/** V8's heap and memory outside it (buffers, the bundle's strings) as a Node process reports them on /metrics. */
async function nodeHeap(url: string): Promise<Record<string, number> | undefined> {
  try {
    const res = await fetch(url);
    if (!res.ok) return undefined;
    const samples = parseExposition(await res.text()).samples;
    const value = (name: string): number => samples.find((s) => s.name === name && Object.keys(s.labels).length === 0)?.value ?? 0;
    return {
      residentMb: round(value('process_resident_memory_bytes') / 2 ** 20),
      heapUsedMb: round(value('nodejs_heap_size_used_bytes') / 2 ** 20),
      heapTotalMb: round(value('nodejs_heap_size_total_bytes') / 2 ** 20),
      externalMb: round(value('nodejs_external_memory_bytes') / 2 ** 20),
    };
  } catch {
    return undefined;
  }
}

/** Ctrl-C to the group it started; resolves when npm and every process it had are gone (what is left is killed). */
async function stopStack(npm: ChildProcess, pids: readonly number[]): Promise<void> {
  const alive = (pid: number): boolean => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  if (npm.pid !== undefined && npm.exitCode === null) process.kill(-npm.pid, 'SIGINT');
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while (pids.some(alive) && Date.now() < deadline) await sleep(250);
  const left = pids.filter(alive);
  if (left.length > 0) {
    console.error(`still running ${STOP_TIMEOUT_MS / 1000} s after Ctrl-C, killed: ${left.join(', ')}`);
    for (const pid of left) process.kill(pid, 'SIGKILL');
  }
}

async function main(): Promise<void> {
  const loadAtStart = os.loadavg();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-memory-'));
  const ports = {
    PORT: await freePort(),
    TEMPORAL_PORT: await freePort(),
    TEMPORAL_UI_PORT: await freePort(),
    QUORUM_WORKER_METRICS_PORT: await freePort(),
  };
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    QUORUM_DATA_DIR: dataDir,
    ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
  };
  // Everything npm start would otherwise take from elsewhere: its own Postgres and dev server, not the shell's.
  for (const name of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'QUORUM_WORKFLOW_BUNDLE']) delete env[name];
  const t0 = Date.now();
  const s = await startNpm(env).catch((err: unknown) => {
    fs.rmSync(dataDir, { recursive: true, force: true });
    throw err;
  });
  let stackPids: number[] = [];
  try {
    const readyS = (Date.now() - t0) / 1000;
    console.log(`npm start ready in ${readyS.toFixed(1)} s (build included); warming up`);
    const calls = await warmUp(s);
    console.log(`${calls} calls answered; idle ${IDLE_S} s`);
    await sleep(IDLE_S * 1000);

    const postgres = new Set(treeMemory(postgresRoots(dataDir)).map((p) => p.pid));
    const procs = treeMemory([s.npm.pid ?? -1, ...postgresRoots(dataDir)]);
    stackPids = procs.map((p) => p.pid);
    const alone = pssAmong(stackPids);
    const rows = rowsOf(procs, postgres, alone);
    const total = (f: (r: Row) => number): number => round(rows.reduce((n, r) => n + f(r), 0));
    const totalPssMb = total((r) => r.pssAloneMb);
    const heaps = {
      'api /metrics': await nodeHeap(`${s.apiUrl}/metrics`),
      'worker /metrics': await nodeHeap(`http://127.0.0.1:${ports.QUORUM_WORKER_METRICS_PORT}/metrics`),
    };

    const columns: [string, number, (r: Row) => string | number][] = [
      ['process', -36, (r) => r.role],
      ['n', 4, (r) => r.processes],
      ['PSS', 8, (r) => r.pssAloneMb.toFixed(1)],
      ['kernel', 8, (r) => r.pssMb.toFixed(1)],
      ['anon', 8, (r) => r.pssAnonMb.toFixed(1)],
      ['file', 8, (r) => r.pssFileMb.toFixed(1)],
      ['shmem', 8, (r) => r.pssShmemMb.toFixed(1)],
      ['RSS', 8, (r) => r.rssMb.toFixed(1)],
    ];
    const line = (cells: (string | number)[]): string =>
      cells.map((c, i) => (columns[i][1] < 0 ? String(c).padEnd(-columns[i][1]) : String(c).padStart(columns[i][1]))).join('');
    console.log(
      `\nlocal stack memory after ${calls} calls and ${IDLE_S} s idle, MB. PSS: each page split among the stack's processes that map it, ` +
        `as on a machine running nothing else${alone ? '' : " (unreadable without root: the kernel's figure)"}; kernel: /proc's PSS, ` +
        `which also splits pages with processes outside the stack (another Node or Temporal); anon/file/shmem: the kernel's split of it`,
    );
    console.log(line(columns.map(([name]) => name)));
    for (const r of rows) console.log(line(columns.map(([, , cell]) => cell(r))));
    const totals: Row = {
      role: 'total',
      processes: procs.length,
      pssAloneMb: totalPssMb,
      pssMb: total((r) => r.pssMb),
      rssMb: total((r) => r.rssMb),
      pssAnonMb: total((r) => r.pssAnonMb),
      pssFileMb: total((r) => r.pssFileMb),
      pssShmemMb: total((r) => r.pssShmemMb),
    };
    console.log(
      `${line(columns.map(([, , cell]) => cell(totals)))}   target < ${TARGET_PSS_MB} MB PSS: ${totalPssMb < TARGET_PSS_MB ? 'met' : 'missed'}`,
    );
    for (const [name, heap] of Object.entries(heaps))
      if (heap)
        console.log(
          `${name}: V8 heap used ${heap.heapUsedMb} of ${heap.heapTotalMb} MB, external ${heap.externalMb} MB, resident ${heap.residentMb} MB`,
        );
    const load = os.loadavg();
    console.log(`load average ${load.map((l) => l.toFixed(2)).join(' ')} (at start ${loadAtStart.map((l) => l.toFixed(2)).join(' ')})`);

    const date = new Date().toISOString();
    const file = writeResults(
      'stack-memory',
      {
        date,
        command: 'npm run bench:memory',
        machine: machine(loadAtStart),
        settings: Object.fromEntries(SETTINGS.map((k) => [k, process.env[k] ?? null])),
        idleSeconds: IDLE_S,
        warmUpCalls: calls,
        readySeconds: round(readyS),
        targetPssMb: TARGET_PSS_MB,
        totalPssMb,
        rows: [...rows, totals],
        nodeHeaps: heaps,
        pssAlone: alone !== undefined,
        processes: procs.map((p) => ({
          pid: p.pid,
          role: roleOf(p, postgres),
          comm: p.comm,
          pssAloneMb: mb(alone?.get(p.pid) ?? p.pssKb),
          pssMb: mb(p.pssKb),
          rssMb: mb(p.rssKb),
        })),
      },
      'stack-memory-latest.json',
    );
    console.log(`results: ${path.relative(repoRoot, file)}`);
  } finally {
    // Processes found afterwards too (a restart, a late backend) are stopped with the rest.
    const all = [...new Set([...stackPids, ...treeMemory([s.npm.pid ?? -1, ...postgresRoots(dataDir)]).map((p) => p.pid)])];
    await stopStack(s.npm, all);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
