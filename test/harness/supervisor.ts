import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../../infra/paths';
import { listProcesses, type ProcessInfo } from './faults';

export interface StartedSupervisor {
  child: ChildProcess;
  /** Everything it and its children printed so far. */
  output(): string;
}

/** A stack started here and not yet ended by `endStartedStacks`, with its data folder (QUORUM_DATA_DIR) if its env set one. */
interface Spawned {
  child: ChildProcess;
  dataDir: string | undefined;
}

const unended = new Set<Spawned>();
/** False from the moment a test's afterEach ends its stacks until the next test begins (endStacksAfterEachTest). */
let acceptingStarts = true;

/**
 * `npm start`'s own entry point, the compiled supervisor (with `--cluster`: `npm run start:cluster`'s), as a terminal
 * runs it; resolves once it prints its last ready line.
 */
export function startSupervisor(env: NodeJS.ProcessEnv, args: string[] = [], readyTimeoutMs = 120_000): Promise<StartedSupervisor> {
  return startReady(process.execPath, [path.join(repoRoot, 'dist/stack/supervisor.js'), ...args], env, readyTimeoutMs);
}

/**
 * `npm start` itself, through npm, as a user or a process manager runs it (its build step included); `child` is npm.
 * Node 22's npm, as the test runs under scripts/with-node.sh.
 */
export function startThroughNpm(env: NodeJS.ProcessEnv, readyTimeoutMs = 120_000): Promise<StartedSupervisor> {
  return startReady('npm', ['start'], env, readyTimeoutMs);
}

/**
 * `command` in a process group of its own, resolved once the supervisor prints its last ready line. A start that is
 * not ready (it timed out, or the supervisor exited) ends whatever it left before failing.
 */
async function startReady(command: string, args: string[], env: NodeJS.ProcessEnv, readyTimeoutMs: number): Promise<StartedSupervisor> {
  // A test that timed out goes on running in the background: it must not start a stack after its afterEach ended its own.
  if (!acceptingStarts) throw new Error('a stack started after its test ended (the test timed out): refused');
  const child = spawn(command, args, {
    cwd: repoRoot,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group, as in a terminal: a test's Ctrl-C goes to that group, not to mocha's.
    detached: true,
  });
  // Registered at once, not once ready: a test that times out while this start waits must still end it.
  const spawned: Spawned = { child, dataDir: env.QUORUM_DATA_DIR };
  unended.add(spawned);
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`supervisor not ready in ${readyTimeoutMs} ms:\n${out}`)), readyTimeoutMs);
      child.stdout?.on('data', () => {
        // The last line a ready start prints (the URLs and the demo key come before it).
        if (/\[quorum\] Ctrl-C stops everything/.test(out)) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`supervisor exited (${String(code)}) before ready:\n${out}`));
      });
    });
  } catch (err) {
    await endStack(spawned);
    throw err;
  }
  return { child, output: () => out };
}

/**
 * In a describe whose tests start stacks (startSupervisor, startThroughNpm): each test's stacks end with the test,
 * passed, failed or stopped by mocha's timeout, which runs the afterEach hooks but not the rest of the test, its
 * `finally` included. A start from a test that has ended (timed out, still running in the background) is refused. An
 * afterEach the describe registers after this call runs after the stacks have ended (to remove their folders).
 */
export function endStacksAfterEachTest(): void {
  beforeEach(() => {
    acceptingStarts = true;
  });
  afterEach('end the stacks the test started', async () => {
    acceptingStarts = false;
    await endStartedStacks();
  });
  after(() => {
    acceptingStarts = true;
  });
}

/** Ends at once (SIGKILL) every stack started here and not yet ended, whether or not it is still running. */
export async function endStartedStacks(): Promise<void> {
  const failures: unknown[] = [];
  for (const s of [...unended]) await endStack(s).catch((err: unknown) => failures.push(err));
  if (failures.length > 0) throw failures[0];
}

/**
 * The processes of a stack in the process table `all`: those in `roots` (the process a test started, those found
 * before), every process naming `dataDir` in its command line, and every descendant of these. A group kill of the
 * started process alone would leave most of it: the supervisor starts the Temporal dev server, the API and the local
 * model each in a process group of its own, and pg_ctl starts Postgres in a session of its own (found by its folder).
 */
export function stackProcesses(all: readonly ProcessInfo[], roots: Iterable<number>, dataDir: string | undefined): Set<number> {
  const members = new Set<number>(roots);
  const dir = dataDir?.replace(/\/+$/, '');
  // The folder itself or a path inside it, not a sibling sharing its prefix (/tmp/quorum-x1 is not in /tmp/quorum-x).
  if (dir) for (const p of all) if (`${p.cmd} `.includes(`${dir} `) || p.cmd.includes(`${dir}/`)) members.add(p.pid);
  for (let grew = true; grew;) {
    grew = false;
    for (const p of all)
      if (!members.has(p.pid) && members.has(p.ppid)) {
        members.add(p.pid);
        grew = true;
      }
  }
  return new Set(all.filter((p) => members.has(p.pid)).map((p) => p.pid));
}

/** Whether `pid` is a process still running (an exited one awaiting its parent's wait is not). */
function running(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.charAt(stat.lastIndexOf(')') + 2) !== 'Z';
  } catch {
    return false;
  }
}

/**
 * Everything of one stack ended at once: frozen first (SIGSTOP), so that nothing restarts a child or forks while its
 * processes are gathered, then SIGKILL to the started process's group and to every process of the stack; resolves once
 * the started process has exited and none of the others runs.
 */
async function endStack(spawned: Spawned): Promise<void> {
  unended.delete(spawned);
  const { child, dataDir } = spawned;
  const root = child.pid;
  if (root === undefined) return;
  const failures: unknown[] = [];
  // A process already gone is no error; any other failure is reported once every other signal has been sent.
  const send = (pid: number, signal: NodeJS.Signals): void => {
    try {
      process.kill(pid, signal);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') failures.push(err);
    }
  };
  // The started process and its group only while it has not exited: after that its id may be another process's.
  const alive = child.exitCode === null && child.signalCode === null;
  const exited = alive ? new Promise<void>((resolve) => child.once('exit', () => resolve())) : Promise.resolve();
  if (alive) send(-root, 'SIGSTOP');
  const members = new Set<number>();
  for (let round = 0; round < 100; round++) {
    const roots = alive ? [root, ...members] : members;
    const found = [...stackProcesses(listProcesses(), roots, dataDir)].filter((pid) => pid !== process.pid && !members.has(pid));
    if (found.length === 0) break;
    for (const pid of found) {
      members.add(pid);
      send(pid, 'SIGSTOP');
    }
  }
  if (alive) send(-root, 'SIGKILL');
  for (const pid of members) send(pid, 'SIGKILL');
  await exited;
  const deadline = Date.now() + 10_000;
  while ([...members].some(running) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  if (failures.length > 0) throw new AggregateError(failures, `could not end every process of the stack started as ${root}`);
}
