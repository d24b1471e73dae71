import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { ToolEnv } from './tool-env';

/**
 * Third-party Python tools (llama.cpp's server, Schemathesis, LiteLLM's proxy) pinned on PyPI and installed into a
 * virtual environment cached per user outside the checkout (`${XDG_CACHE_HOME:-~/.cache}/quorum/<name>`, beside the
 * Node and Temporal binaries), so every clone and CI run reuse one install. `QUORUM_PYTHON` names the interpreter
 * (3.10 or later, with `venv`; ToolEnv.python); default `python3`.
 */
export interface VenvSpec {
  /** The folder under the per-user cache; name the pins in it, so a new pin installs afresh. */
  name: string;
  /** pip requirement specifiers, pinned. */
  packages: readonly string[];
  /** More `pip install` options (`--no-deps`). */
  pipOptions?: readonly string[];
  /** Whether an install holds what its user reads beyond the interpreter (a model file); checked before it is kept. */
  complete?: (dir: string) => boolean;
  /** Says what is installed, before and after, as one line each. */
  log?: (line: string) => void;
}

export interface Venv {
  dir: string;
  /** Enter the venv only through this (`python -m tool`): its `bin/` scripts name the staging folder it was built in. */
  python: string;
}

const INSTALL_TIMEOUT_MS = 15 * 60_000;

export function venvDir(name: string, tools: ToolEnv): string {
  return path.join(tools.cacheDir, name);
}

function run(cmd: string, args: readonly string[], what: string, env: NodeJS.ProcessEnv): void {
  const r = spawnSync(cmd, args, { encoding: 'utf8', env, stdio: ['ignore', 'pipe', 'pipe'], timeout: INSTALL_TIMEOUT_MS });
  if (r.error) throw new Error(`${what}: ${r.error.message}`);
  if (r.status !== 0) {
    const tail = `${r.stdout}\n${r.stderr}`.trim().split('\n').slice(-12).join('\n');
    throw new Error(`${what} failed (exit ${String(r.status)}):\n${tail}`);
  }
}

/** The venv of `spec`, installing it first when this user has not yet. Throws with the installer's own words when it cannot. */
export function ensureVenv(spec: VenvSpec, tools: ToolEnv): Venv {
  const dir = venvDir(spec.name, tools);
  const pythonIn = (d: string): string => path.join(d, 'bin', 'python');
  const ready = (d: string): boolean => fs.existsSync(pythonIn(d)) && (spec.complete?.(d) ?? true);
  if (ready(dir)) return { dir, python: pythonIn(dir) };
  return withInstallLock(`${dir}.lock`, () => install(spec, tools, dir, pythonIn, ready));
}

/** Another live process's install of the same venv ends before ours starts: `npm test`'s shards may ask at once. */
function withInstallLock(lock: string, work: () => Venv): Venv {
  const waitUntil = Date.now() + INSTALL_TIMEOUT_MS;
  fs.mkdirSync(path.dirname(lock), { recursive: true });
  for (;;) {
    try {
      fs.writeFileSync(lock, String(process.pid), { flag: 'wx' });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let holder: number;
    try {
      holder = Number(fs.readFileSync(lock, 'utf8'));
    } catch {
      continue; // released while we looked
    }
    if (!alive(holder)) fs.rmSync(lock, { force: true });
    else if (Date.now() > waitUntil) throw new Error(`${lock}: process ${holder} has been installing for too long`);
    else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
  }
  try {
    return work();
  } finally {
    fs.rmSync(lock, { force: true });
  }
}

/** Whether `pid` runs (0 or unreadable: a lock file caught between its creation and its pid being written counts as live). */
function alive(pid: number): boolean {
  if (!(pid > 0)) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function install(spec: VenvSpec, tools: ToolEnv, dir: string, pythonIn: (d: string) => string, ready: (d: string) => boolean): Venv {
  if (ready(dir)) return { dir, python: pythonIn(dir) };
  const log = spec.log ?? ((line: string) => console.error(line));
  const started = Date.now();
  log(`Installing ${spec.packages.join(', ')} from PyPI into ${dir} (once per user)...`);
  // Built beside its place and renamed into it whole: an install cut off halfway is never taken for a finished one.
  const tmp = `${dir}.tmp-${process.pid}`;
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  try {
    const base = tools.python;
    run(
      base,
      ['-m', 'venv', tmp],
      `${base} -m venv (Python 3.10 or later with venv is needed; set QUORUM_PYTHON to choose one)`,
      tools.inherited,
    );
    run(
      pythonIn(tmp),
      ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', ...(spec.pipOptions ?? []), ...spec.packages],
      `pip install ${spec.packages.join(' ')}`,
      tools.inherited,
    );
    if (!ready(tmp)) throw new Error(`pip installed ${spec.packages.join(' ')} into ${tmp}, but it lacks what its user reads`);
    // A clone that finished first keeps its install (it may be running it); ours is dropped.
    if (ready(dir)) fs.rmSync(tmp, { recursive: true, force: true });
    else {
      fs.rmSync(dir, { recursive: true, force: true });
      fs.renameSync(tmp, dir);
    }
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
  log(`Installed in ${Math.round((Date.now() - started) / 1000)} s`);
  return { dir, python: pythonIn(dir) };
}
