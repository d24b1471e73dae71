import { fork, type ChildProcess } from 'node:child_process';
import type { Logger } from './log';
import { runtimeExecArgv, runtimeModule } from './paths';

/**
 * Environment every product process starts with unless it says otherwise. MALLOC_ARENA_MAX=2: glibc gives each
 * thread that allocates (libuv's pool, the Temporal SDK's Rust threads, the workflow thread) an arena of its own,
 * 43–62 MB of a Node process's resident memory at rest; two hold 8–10 (the memory bench, docs/performance.md), at
 * the price of threads waiting on each other's mallocs under load. Read by the C library at start: it must be set
 * before the process runs (the Dockerfile sets it too).
 */
export const PROCESS_ENV_DEFAULTS: Readonly<NodeJS.ProcessEnv> = { MALLOC_ARENA_MAX: '2' };

/**
 * Node and V8 flags every product process starts with (the Dockerfile's NODE_OPTIONS holds the same, kept equal by a
 * test; `.mocharc.cjs` gives the tests' own process the first).
 * - AsyncLocalStorage without async_hooks (Node 24's default; a flag from 22.7 to 23): the Temporal SDKs keep their
 *   contexts in it, and under async_hooks every promise of the process then pays an init hook. Measured A/B/A/B, an
 *   express call's API and worker CPU 43.6 and 45.8 ms with async_hooks, 41.3 and 38.9 without; a panel's 66.3 and
 *   61.5, 56.5 and 60.9 (docs/performance.md, "Levers taken"). The SDK's CI runs on Node 24, so under this model.
 * - Young generations of 4 MB semi-spaces instead of 16 (each of the process's three isolates keeps them full after a
 *   burst: about 50 MB resident at rest), and each isolate's old space capped at 256 MB, so V8 collects instead of
 *   growing: 500 panels in flight peaked at 387 MB instead of 799, all answered, their live main heap about 112 MB
 *   (docs/performance.md, "Memory in flight"). The cap is over what the calls in flight can hold live: the workers
 *   take on what their CPU serves and a request body is at most 256 KB.
 */
export function processNodeFlags(nodeMajor: number): readonly string[] {
  // Node 24 refuses the flag: the model is its default there.
  return [...(nodeMajor < 24 ? ['--experimental-async-context-frame'] : []), '--max-semi-space-size=4', '--max-old-space-size=256'];
}

export const PROCESS_NODE_FLAGS: readonly string[] = processNodeFlags(Number(process.versions.node.split('.')[0]));

export interface ForkedEntryPoint {
  child: ChildProcess;
  /** Resolves when the process reports ready over IPC; rejects when it exits first. */
  ready: Promise<void>;
}

/**
 * One of our entry points (`worker/main`, `api/main`) as its own Node process, loaded as this runtime loads modules
 * (compiled, or the sources through tsx): how `npm start` runs them, and how tests run them to kill them. In a process
 * group of its own, it stops when its parent says so (SIGTERM) or is gone (its IPC channel closes; see
 * `onStopRequest`), not on a terminal's Ctrl-C meant for the parent.
 */
export function forkEntryPoint(module: string, env: NodeJS.ProcessEnv, output: 'inherit' | 'ignore'): ForkedEntryPoint {
  const child = fork(runtimeModule(module), [], {
    execArgv: [...runtimeExecArgv, ...PROCESS_NODE_FLAGS],
    env: { ...PROCESS_ENV_DEFAULTS, ...env },
    stdio: ['ignore', output, output, 'ipc'],
    detached: true,
  });
  const ready = new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code, signal) => reject(new Error(`${module} exited (${describeExit(code, signal)}) before it was ready`)));
  });
  return { child, ready };
}

export function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  return signal ?? `code ${String(code)}`;
}

/**
 * In an entry point: `drain` runs on the first stop request (SIGINT, SIGTERM, or the parent that forked this process
 * gone, which sends no signal into our process group); a second request stops the process at once.
 */
export function onStopRequest(log: Logger, graceMs: number, drain: () => void): void {
  let requested = false;
  const request = (reason: string): void => {
    if (requested) {
      log.warn('stopping at once', { reason });
      process.exit(1);
    }
    requested = true;
    log.info('draining', { reason, graceMs });
    drain();
  };
  process.on('SIGINT', request);
  process.on('SIGTERM', request);
  process.once('disconnect', () => request('parent process gone'));
}
