import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { repoRoot } from '../../infra/paths';

export interface StartedSupervisor {
  child: ChildProcess;
  /** Everything it and its children printed so far. */
  output(): string;
}

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

/** `command` in a process group of its own, resolved once the supervisor prints its last ready line. */
async function startReady(command: string, args: string[], env: NodeJS.ProcessEnv, readyTimeoutMs: number): Promise<StartedSupervisor> {
  const child = spawn(command, args, {
    cwd: repoRoot,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group, as in a terminal: a test's Ctrl-C goes to that group, not to mocha's.
    detached: true,
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
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
  return { child, output: () => out };
}
