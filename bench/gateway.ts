import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { freePort } from '../infra/free-port';
import { ensureVenv } from '../stack/python-venv';
import { criticalPathMs, drive, statusCounts, type Call } from './drive';
import { cpuDelta, sampleCpu, treeMemory } from './procs';
import { round } from './results';
import { summary } from './stats';
import { loadConfig } from '../infra/config';
import { toolEnv } from '../stack/tool-env';

/**
 * A plain pass-through gateway in front of the load bench's loopback engine, measured as Quorum is (issue 31):
 * LiteLLM's proxy, the most used open-source one, from PyPI, pinned, in a venv cached per user
 * (stack/python-venv.ts). One worker process, as Quorum runs one API process; offline (every catalogue it would
 * fetch at start read from the copy in the package; no database, so no spend logs; no callbacks); it checks a master
 * key as a deployed gateway does; logs at error level, as the bench's Quorum processes do.
 */
export const LITELLM_VERSION = '1.106.2';
const PACKAGES = [`litellm[proxy]==${LITELLM_VERSION}`];
const MASTER_KEY = 'sk-quorum-bench-gateway';
const READY_TIMEOUT_MS = 180_000;

/** The files LiteLLM would fetch from GitHub at start or on first use; each switch makes it read the copy it ships. */
const OFFLINE_ENV = {
  LITELLM_LOCAL_MODEL_COST_MAP: 'True',
  LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS: 'True',
  LITELLM_LOCAL_BLOG_POSTS: 'True',
  LITELLM_LOCAL_AUTOROUTER_PRESETS: 'True',
  LITELLM_LOCAL_POLICY_TEMPLATES: 'True',
};

interface Gateway {
  url: string;
  pid: number;
  command: string[];
  startupS: number;
  stop(): Promise<void>;
}

async function startGateway(engine: { baseUrl: string; apiKey: string; model: string }): Promise<Gateway> {
  const { python } = ensureVenv({ name: `litellm-${LITELLM_VERSION}`, packages: PACKAGES }, toolEnv(loadConfig(), process.env));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-gateway-'));
  const config = path.join(dir, 'config.yaml');
  fs.writeFileSync(
    config,
    stringify({
      model_list: [
        { model_name: engine.model, litellm_params: { model: `openai/${engine.model}`, api_base: engine.baseUrl, api_key: engine.apiKey } },
      ],
      general_settings: { master_key: MASTER_KEY },
    }),
  );
  const port = await freePort();
  // `python -m`: the venv's bin/ scripts name the folder it was built in. `--num_workers 1` has uvicorn serve in this
  // one process (no supervisor, no worker children).
  const command = [
    python,
    '-m',
    'litellm.proxy.proxy_cli',
    '--config',
    config,
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '--num_workers',
    '1',
  ];
  const started = performance.now();
  // Its own environment, not the bench's: no DATABASE_URL or DATABASE_* (it would start Prisma), no HTTP(S)_PROXY
  // between it and the loopback.
  const child = spawn(command[0], command.slice(1), {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, LANG: 'C.UTF-8', LITELLM_LOG: 'ERROR', ...OFFLINE_ENV },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  const keep = (chunk: Buffer): void => {
    output = (output + chunk.toString()).slice(-4_000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(killer);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  const url = `http://127.0.0.1:${port}`;
  try {
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`LiteLLM's proxy exited before it answered:\n${output}`);
      if (performance.now() - started > READY_TIMEOUT_MS)
        throw new Error(`LiteLLM's proxy did not answer in ${READY_TIMEOUT_MS / 1000} s:\n${output}`);
      const live = await fetch(`${url}/health/liveliness`, { signal: AbortSignal.timeout(1_000) }).catch(() => undefined);
      if (live?.ok) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { url, pid: child.pid ?? -1, command, startupS: round((performance.now() - started) / 1000, 1), stop };
}

/** The loopback's log of served intervals by call tag (bench/load.ts's engine state). */
export interface EngineLog {
  engineMs: number;
  served: Map<string, [number, number][]>;
}

export interface GatewayPhase {
  concurrency: number;
  calls: number;
  completed: number;
  seconds: number;
  throughputPerS: number;
  latencyMs: ReturnType<typeof summary>;
  /** End to end less the loopback's served time for that call. */
  overheadMs: ReturnType<typeof summary>;
  enginePathMs: ReturnType<typeof summary>;
  statuses: Record<string, number>;
  connectionErrors: number;
  timeouts: number;
  /** Every call answered 200 by the engine's reply, through the gateway (each reached the loopback once). */
  ok: boolean;
  /** utime + stime of the gateway's whole process tree per call; bench = autocannon and the loopback. */
  cpuMsPerCall: { gateway: number; bench: number };
}

export interface GatewayResult {
  name: string;
  packages: string[];
  command: string[];
  startupS: number;
  /** What LiteLLM runs: every process of its tree, with its threads and memory, after the warm-up. */
  processes: { pid: number; comm: string; args: string[]; threads: number; rssMb: number; pssMb: number }[];
  idleCpuMsPerS: number;
  loadAverage: { start: number[]; end: number[] };
  phases: GatewayPhase[];
}

function threadsOf(pid: number): number {
  try {
    return fs.readdirSync(`/proc/${pid}/task`).length;
  } catch {
    return 0;
  }
}

/**
 * Starts the gateway in front of the loopback, warms it up, measures its idle CPU and then each phase (`calls` at
 * `concurrency`, the loopback answering at once), and stops it. `content(tag)` is the user message, carrying the
 * call's tag so the loopback's log can be split by call.
 */
export async function measureGateway(opts: {
  engine: { baseUrl: string; apiKey: string; log: EngineLog };
  model: string;
  content: (tag: string) => string;
  phases: readonly { concurrency: number; calls: number }[];
  maxS: number;
  idleWindowMs: number;
}): Promise<GatewayResult> {
  const loadAtStart = os.loadavg();
  const { log } = opts.engine;
  const gateway = await startGateway({ baseUrl: opts.engine.baseUrl, apiKey: opts.engine.apiKey, model: opts.model });
  try {
    const groups = { gateway: [gateway.pid] };
    const runPhase = async (concurrency: number, calls: number): Promise<GatewayPhase> => {
      log.engineMs = 0;
      log.served.clear();
      const answered: Call[] = [];
      const before = sampleCpu(groups);
      const t0 = performance.now();
      const result = await drive(
        {
          url: gateway.url,
          path: '/v1/chat/completions',
          concurrency,
          calls,
          maxS: opts.maxS,
          headers: { authorization: `Bearer ${MASTER_KEY}` },
          // max_tokens as Quorum's adapter sends it (the loopback, like OpenAI's older models, wants one).
          request: (tag) => ({
            body: JSON.stringify({ model: opts.model, messages: [{ role: 'user', content: opts.content(tag) }], max_tokens: 256 }),
          }),
        },
        (call) => answered.push(call),
      );
      const seconds = (performance.now() - t0) / 1000;
      const cpu = cpuDelta(before, sampleCpu(groups));
      const ok = answered.filter((c) => c.status === 200);
      const paths = ok.map((c) => criticalPathMs(log.served.get(c.tag) ?? []));
      const n = Math.max(1, answered.length);
      return {
        concurrency,
        calls,
        completed: answered.length,
        seconds: round(seconds, 2),
        throughputPerS: round(answered.length / seconds),
        latencyMs: summary(ok.map((c) => c.ms)),
        overheadMs: summary(ok.map((c, i) => c.ms - paths[i])),
        enginePathMs: summary(paths),
        statuses: statusCounts(answered),
        connectionErrors: result.errors,
        timeouts: result.timeouts,
        ok:
          answered.length === calls &&
          ok.length === calls &&
          result.errors === 0 &&
          result.timeouts === 0 &&
          ok.every((c) => log.served.get(c.tag)?.length === 1),
        cpuMsPerCall: { gateway: round(cpu.gateway / n, 2), bench: round(cpu.bench / n, 2) },
      };
    };
    // Warm-up, unrecorded: its connection pool to the loopback, Python's first-call imports and caches.
    await runPhase(4, 40);
    await new Promise((resolve) => setTimeout(resolve, opts.idleWindowMs / 2));
    const idleBefore = sampleCpu(groups);
    await new Promise((resolve) => setTimeout(resolve, opts.idleWindowMs));
    const idleCpuMsPerS = round((cpuDelta(idleBefore, sampleCpu(groups)).gateway * 1000) / opts.idleWindowMs);
    const mb = (kb: number): number => round(kb / 1024, 0);
    const processes = treeMemory([gateway.pid]).map((p) => ({
      pid: p.pid,
      comm: p.comm,
      args: p.args.map((a) => a.replace(os.homedir(), '~')),
      threads: threadsOf(p.pid),
      rssMb: mb(p.rssKb),
      pssMb: mb(p.pssKb),
    }));
    const phases: GatewayPhase[] = [];
    for (const { concurrency, calls } of opts.phases) {
      phases.push(await runPhase(concurrency, calls));
      console.error(`  gateway: ${concurrency} concurrent: done (${calls} calls)`);
    }
    return {
      name: `LiteLLM proxy ${LITELLM_VERSION}`,
      packages: PACKAGES,
      command: gateway.command.map((a) => a.replace(os.homedir(), '~')),
      startupS: gateway.startupS,
      processes,
      idleCpuMsPerS,
      loadAverage: { start: loadAtStart.map((l) => round(l, 2)), end: os.loadavg().map((l) => round(l, 2)) },
      phases,
    };
  } finally {
    await gateway.stop();
  }
}
