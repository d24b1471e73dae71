import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import { Client } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { loadConfig } from '../infra/config';
import { freePort } from '../infra/free-port';
import { resolveTemporalBinary } from '../stack/temporal-binary';
import { spawnDevServer, waitForTemporal } from '../stack/temporal-server';
import { toolEnv } from '../stack/tool-env';
import { QuorumLane, QuorumMode, QuorumOrg, QuorumStatus } from '../workflows/search-attributes';
import { criticalPathMs } from './drive';
import { cpuDelta, sampleCpu } from './procs';
import { round } from './results';
import { summary } from './stats';

/**
 * Issue 42: how much of an express call's cost is the SDK's for the call's shape, with none of Quorum's code. Temporal's
 * floor (../shared/tools/temporal-floor) is one local activity; Quorum's express deliberation is three (the hold, the
 * engine call, the settle) with two patch markers, three search-attribute upserts and a memo, started with its search
 * attributes and memo and an input of the size Quorum's carries; a panel's steps are eleven (nine engine calls). Both
 * shapes run here on the same dev server with `npm start`'s settings (SQLite WAL, our dynamic config), a client and a
 * worker in this one process as Quorum's dev target runs its API and worker, eager start, activities that do nothing
 * but the engine call (a plain HTTP server in its own process, answering at once unless the phase delays it). The
 * floor's workflow and the express shape alternated one at a time, then each, and the panel's, 16 at a time; last the
 * panel's 16 at a time with its engine answering after 500 ms.
 * Issue 55 states bench:load's targets against these phases (bench/peer-table.ts): the express shape alone and at 16,
 * the panel shape at 16 with instant and with 500 ms engines. A phase's overhead is bench/load.ts's: latency less the
 * engines' critical path of the call (drive.ts `criticalPathMs` over each engine call's [sent, sent + its delay]), so
 * with instant engines it is the latency.
 * `node --import tsx bench/shape-floor.ts` (BENCH_SHAPE_N: calls a phase, default 300; BENCH_SHAPE_ONLY below).
 */
const N = Number(process.env.BENCH_SHAPE_N ?? 300);
/** BENCH_SHAPE_ONLY='expressShape@1,panelShape@16': only the phases so named (a profile of one shape's calls). */
const ONLY = process.env.BENCH_SHAPE_ONLY?.split(',').map((name) => name.trim());
const TASK_QUEUE = 'shape-floor';
type Shape = 'oneStep' | 'expressShape' | 'panelShape';
/** The slow engines of bench/load.ts's phases and of the panel shape's last phase: issue 55 holds the one to the other. */
export const SLOW_ENGINE_MS = 500;

export interface ShapeActivities {
  callEngine(prompt: string): Promise<string>;
  hold(mode: unknown): Promise<{ seats: { engineId: string; source: string }[] }>;
  settle(done: unknown): Promise<void>;
}

/** The engine answers after the call's `x-engine-ms` (at once without one: no timer in the instant phases' way). */
function startEngine(port: number): { stop(): void } {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `require('http').createServer((q, r) => { q.resume(); q.on('end', () => { const answer = () => { r.setHeader('content-type', 'application/json');
        r.end(JSON.stringify({ id: 'x', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'Paris.' },
        finish_reason: 'stop' }], usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 } })); };
        const ms = Number(q.headers['x-engine-ms'] || 0); if (ms > 0) setTimeout(answer, ms); else answer(); }); }).listen(${port}, '127.0.0.1');`,
    ],
    { stdio: 'ignore' },
  );
  return { stop: () => child.kill('SIGTERM') };
}

/** The phase's engine delay, and each call's engine calls by workflow id as bench/load.ts's loopback logs them. */
interface EngineState {
  engineMs: number;
  served: Map<string, [number, number][]>;
}

function activities(enginePort: number, engine: EngineState): ShapeActivities & { close(): void } {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const callEngine = (prompt: string): Promise<string> =>
    new Promise((resolve, reject) => {
      const workflowId = Context.current().info.workflowExecution?.workflowId ?? '';
      const sent = performance.now();
      const interval: [number, number] = [sent, sent + engine.engineMs];
      const log = engine.served.get(workflowId);
      if (log) log.push(interval);
      else engine.served.set(workflowId, [interval]);
      const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: prompt }] });
      const req = http.request(
        {
          host: '127.0.0.1',
          port: enginePort,
          path: '/v1/chat/completions',
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'x-engine-ms': String(engine.engineMs) },
        },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve((JSON.parse(text) as { choices: { message: { content: string } }[] }).choices[0].message.content));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  return {
    callEngine,
    hold: () => Promise.resolve({ seats: [{ engineId: 'gpt-4.1-mini', source: 'service' }] }),
    settle: () => Promise.resolve(),
    close: () => agent.destroy(),
  };
}

/** About what Quorum's start input carries for an express call: ids, the mode's configuration (522 bytes), the prompt. */
const MODE = {
  id: 'quick',
  version: 3,
  config: { seats: [{ engine: 'gpt-4.1-mini', backups: ['claude-haiku'] }], fees: { platformBps: 500 } },
};
const modeJson = JSON.stringify(MODE);
const INPUT_MODE = { ...MODE, padding: 'x'.repeat(Math.max(0, 522 - modeJson.length)) };

export interface ShapePhase {
  shape: Shape;
  /** The engine's delay on every engine call: 0 (at once) or SLOW_ENGINE_MS. */
  engineMs: number;
  concurrency: number;
  calls: number;
  eager: number;
  p50Ms: number;
  p99Ms: number;
  /** Latency less the engines' critical path (the latency itself with instant engines). */
  overheadP50Ms: number;
  overheadP99Ms: number;
  perS: number;
  cpuMsPerCall: { process: number; temporal: number; total: number };
}

async function phase(client: Client, serverPid: number, engine: EngineState, spec: ShapePhaseSpec): Promise<ShapePhase> {
  const { shape, calls, concurrency, engineMs } = spec;
  const latencies: number[] = [];
  const overheads: number[] = [];
  let eager = 0;
  const one = async (): Promise<void> => {
    const started = performance.now();
    const requestId = randomUUID();
    const handle = await client.workflow.start(shape, {
      taskQueue: TASK_QUEUE,
      workflowId: requestId,
      args: [{ prompt: `what is the capital of France? ${requestId}`, mode: INPUT_MODE, requestId, orgId: randomUUID(), tier: 'plus' }],
      requestEagerStart: true,
      workflowTaskTimeout: '5 seconds',
      typedSearchAttributes: [
        { key: QuorumOrg, value: 'org' },
        { key: QuorumMode, value: 'quick' },
        { key: QuorumLane, value: 'pending' },
        { key: QuorumStatus, value: 'running' },
      ],
      memo: { requestId, model: 'quorum/quick', tier: 'plus' },
    });
    if (handle.eagerlyStarted) eager++;
    await handle.result();
    const latency = performance.now() - started;
    latencies.push(latency);
    overheads.push(latency - criticalPathMs(engine.served.get(requestId) ?? []));
    engine.served.delete(requestId);
  };
  // The warm-up with instant engines: it is for the JIT and the caches, and 20 slow panels one at a time take 50 s.
  engine.engineMs = 0;
  for (let i = 0; i < 20; i++) await one();
  latencies.length = 0;
  overheads.length = 0;
  eager = 0;
  engine.engineMs = engineMs;
  // This process alone (every thread, none of its children: the dev server and the engine are children), and the server.
  const processBefore = process.cpuUsage();
  const before = sampleCpu({ temporal: [serverPid] });
  const wallStart = performance.now();
  let left = calls;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (left-- > 0) await one();
    }),
  );
  const wallS = (performance.now() - wallStart) / 1000;
  const ownUs = process.cpuUsage(processBefore);
  const used = { process: (ownUs.user + ownUs.system) / 1000, temporal: cpuDelta(before, sampleCpu({ temporal: [serverPid] })).temporal };
  const perCall = (ms: number): number => round(ms / calls);
  const s = summary([...latencies].sort((a, b) => a - b));
  const o = summary(overheads);
  return {
    shape,
    engineMs,
    concurrency,
    calls,
    eager,
    p50Ms: round(s.p50),
    p99Ms: round(s.p99),
    overheadP50Ms: round(o.p50),
    overheadP99Ms: round(o.p99),
    perS: round(calls / wallS),
    cpuMsPerCall: { process: perCall(used.process), temporal: perCall(used.temporal), total: perCall(used.process + used.temporal) },
  };
}

export interface ShapeFloorResult {
  command: string;
  phases: ShapePhase[];
  /** Why there are no figures: the dev server or the worker failed. */
  error?: string;
}

export type ShapePhaseSpec = { shape: Shape; calls: number; concurrency: number; engineMs: number };

/** The shapes' dev server (`npm start`'s settings), engine and worker, kept up to run phases on. */
export interface ShapeStack {
  phase(spec: ShapePhaseSpec): Promise<ShapePhase>;
  stop(): Promise<void>;
}

/** The shapes' own dev server, engine and worker, the client and the worker in this process. */
export async function startShapeStack(): Promise<ShapeStack> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'shape-floor-'));
  const [port, uiPort, enginePort] = [await freePort(), await freePort(), await freePort()];
  const server = spawnDevServer({
    binary: resolveTemporalBinary(toolEnv(loadConfig(), process.env)),
    port,
    uiPort,
    dbFile: path.join(dir, 'temporal.db'),
    namespace: 'default',
  });
  const engineServer = startEngine(enginePort);
  const engine: EngineState = { engineMs: 0, served: new Map() };
  const acts = activities(enginePort, engine);
  const cleanUp = (): void => {
    acts.close();
    engineServer.stop();
    server.kill('SIGTERM');
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitForTemporal(`127.0.0.1:${port}`, 'default');
    const connection = await NativeConnection.connect({ address: `127.0.0.1:${port}` });
    const worker = await Worker.create({
      connection,
      taskQueue: TASK_QUEUE,
      workflowsPath: require.resolve('./shape-floor-workflows'),
      activities: { callEngine: acts.callEngine, hold: acts.hold, settle: acts.settle },
    });
    const running = worker.run();
    // Eager start needs the client on the worker's own connection (the server hands the task to a worker on it).
    const client = new Client({ connection });
    return {
      phase: (spec) => phase(client, server.pid ?? 0, engine, spec),
      stop: async () => {
        worker.shutdown();
        await running;
        await connection.close();
        cleanUp();
      },
    };
  } catch (err) {
    cleanUp();
    throw err;
  }
}

/** Every shape's phases on a stack of their own, one after the other. Never throws. */
export async function runShapeFloor(calls: number): Promise<ShapeFloorResult> {
  const command = `BENCH_SHAPE_N=${calls} node --import tsx bench/shape-floor.ts`;
  const phases: ShapePhase[] = [];
  try {
    const stack = await startShapeStack();
    try {
      const run = async (shape: Shape, n: number, concurrency: number, engineMs = 0): Promise<void> => {
        if (ONLY && !ONLY.includes(`${shape}@${concurrency}`)) return;
        phases.push(await stack.phase({ shape, calls: n, concurrency, engineMs }));
      };
      for (const shape of ['oneStep', 'expressShape', 'oneStep', 'expressShape'] as const) await run(shape, calls, 1);
      for (const shape of ['oneStep', 'expressShape', 'panelShape'] as const) await run(shape, 2 * calls, 16);
      // About 2.5 s a panel: `calls` of them (48 s at 300) are enough for a p99.
      await run('panelShape', calls, 16, SLOW_ENGINE_MS);
    } finally {
      await stack.stop();
    }
    return { command, phases };
  } catch (err) {
    return { command, phases, error: err instanceof Error ? err.message : String(err) };
  }
}

/** The phases as lines of text, for this script and for `bench:load`. */
export function shapeFloorText(result: ShapeFloorResult): string[] {
  const lines = ['  shape         engine  conc  calls  eager   p50 ms   p99 ms  ovh p50  ovh p99    /s   CPU ms/call (process; Temporal)'];
  for (const r of result.phases)
    lines.push(
      `  ${r.shape.padEnd(13)} ${`${r.engineMs}ms`.padStart(6)} ${String(r.concurrency).padStart(5)} ${String(r.calls).padStart(6)} ${String(r.eager).padStart(6)} ${[r.p50Ms, r.p99Ms, r.overheadP50Ms, r.overheadP99Ms].map((v) => v.toFixed(1).padStart(8)).join(' ')} ${r.perS.toFixed(1).padStart(5)}   ${r.cpuMsPerCall.total.toFixed(1)} (${r.cpuMsPerCall.process.toFixed(1)}; ${r.cpuMsPerCall.temporal.toFixed(1)})`,
    );
  if (result.error) lines.push(`  SHAPE FLOOR FAILED: ${result.error}`);
  return lines;
}

if (require.main === module)
  void runShapeFloor(N).then((result) => {
    for (const line of shapeFloorText(result)) console.log(line);
    console.log(JSON.stringify({ date: new Date().toISOString(), loadAverage: os.loadavg(), ...result }));
    if (result.error) process.exitCode = 1;
  });
