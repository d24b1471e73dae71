import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { createApiKey } from '../db/repositories/api-keys';
import { upsertMode } from '../db/repositories/modes';
import { createOrganisation } from '../db/repositories/organisations';
import { SYSTEM_MODES, type ModeConfig } from '../domain/modes';
import { JUDGE_TAG, SYNTHESIS_TAG } from '../domain/prompts';
import { workflowIds } from '../domain/workflow-ids';
import { repoRoot } from '../infra/paths';
import { freePort } from '../infra/free-port';
import { OPENAI_TEST_KEY, openAiReply, startOpenAiLoopback } from '../test/fixtures/providers/openai';
import type { RecordedRequest, Reply } from '../test/fixtures/providers/loopback';
import { stack, startStack, stopStack } from '../test/harness/stack';
import { stackProcessEnv } from '../test/harness/worker';
import { cpuDelta, findProcesses, sampleCpu, treeRss, type CpuSample } from './procs';
import { machine, round, writeResults } from './results';
import { summary } from './stats';

/**
 * DESIGN §13 through HTTP, as a client sees it (issue 16): the API and the worker as their own processes (as `npm
 * start` runs them), the real Temporal dev server and Postgres, every seat and the staff on an OpenAI-compatible
 * loopback engine (the real adapter path, not `sim`), and HTTP load from autocannon on 127.0.0.1, bounded in count
 * and time. Per phase: latency percentiles, throughput, errors by status, overhead (end to end minus the engine
 * time the loopback served on the call's critical path) and CPU per call summed over every process of the stack.
 * Prints a table and writes JSON under bench/results/; asserts nothing.
 *   BENCH_LOAD_SCALE=0.1 runs a tenth of the calls (a quick check); BENCH_LOAD_IN_FLIGHT sets the memory phase's size;
 *   BENCH_LOAD_ONLY='express 0,express 500' runs only the phases so named (and no memory phase, unless the list names
 *   'memory'); BENCH_LOAD_CPU_PROF=<dir> has the API and the worker
 *   write V8 CPU profiles there when they stop (open them in Chrome DevTools), to see where their CPU goes.
 */
const SCALE = Number(process.env.BENCH_LOAD_SCALE ?? 1);
const IN_FLIGHT = Number(process.env.BENCH_LOAD_IN_FLIGHT ?? 500);
/** No phase runs longer than this, whatever its count. */
const PHASE_MAX_S = 120;
const SLOW_ENGINE_MS = 500;
const ONLY = process.env.BENCH_LOAD_ONLY?.split(',').map((name) => name.trim());
const CPU_PROF = process.env.BENCH_LOAD_CPU_PROF;
/** Node refuses --cpu-prof in NODE_OPTIONS: it goes on the command line. */
const profileArgs: readonly string[] = CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(CPU_PROF)}`] : [];

/**
 * An entry point as its own process, compiled, as `npm start` runs it (under tsx a process carries the transpiler
 * and its caches too, ~40 MB more resident), with `profileArgs` added.
 */
function forkProduct(module: string, env: NodeJS.ProcessEnv): { child: ChildProcess; ready: Promise<void> } {
  const child = fork(path.join(repoRoot, 'dist', `${module}.js`), [], {
    execArgv: [...profileArgs],
    env,
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    detached: true,
  });
  const ready = new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`${module} exited (code ${String(code)}) before it was ready`)));
  });
  return { child, ready };
}

// The heuristic classifier picks the lane from the prompt (as in bench/deliberation.ts).
const PANEL_PROMPT =
  'prove step by step why the sum of two odd numbers is even, and compare two approaches to caching and explain the trade-offs. Why? How?';
const EXPRESS_PROMPT = 'what is the capital of France?';
/** Each call's own tag, in its prompt, so the loopback's log can be split by call (no leading \b: in a JSON body the
 * judge's `Question:\nref …` reads `\nref`). */
const TAG = /ref (t\d+)\b/;

type Target = 'panel' | 'express' | 'estimate';

interface PhaseSpec {
  target: Target;
  engineMs: number;
  concurrency: number;
  calls: number;
}

interface PhaseResult extends PhaseSpec {
  completed: number;
  seconds: number;
  throughputPerS: number;
  latencyMs: ReturnType<typeof summary>;
  overheadMs: ReturnType<typeof summary> | null;
  /** The loopback's served time on the critical path, per call. */
  enginePathMs: ReturnType<typeof summary> | null;
  engineCallsPerCall: number | null;
  statuses: Record<string, number>;
  /** autocannon's connection errors and timeouts (no HTTP status). */
  connectionErrors: number;
  timeouts: number;
  /** 200s whose receipt shows the other lane or an engine that is not the loopback's: a figure of the wrong path. */
  wrongPath: number;
  cpuMsPerCall: CpuSample;
  /** Postgres transactions committed per call (API, worker and this bench's few reads), from pg_stat_database. */
  pgTransactionsPerCall: number;
}

/** The all-OpenAI panel: every seat and the staff on the loopback, so no `sim` stand-in runs anywhere. */
function openAiPanel(): ModeConfig {
  const base = SYSTEM_MODES[0].config;
  return {
    ...base,
    tiers: {
      experience: { seats: ['openai/gpt-4.1-mini'] },
      plus: { seats: ['openai/gpt-4.1', 'openai/gpt-4.1-mini', 'openai/gpt-5'] },
      pro: { seats: ['openai/gpt-5', 'openai/gpt-4.1', 'openai/gpt-4.1-mini'] },
    },
    staff: {
      judge: { engine: 'openai/gpt-4.1', backup: 'openai/gpt-4.1-mini' },
      synthesis: { engine: 'openai/gpt-4.1', backup: 'openai/gpt-5' },
    },
    // Grounding would add a search step that is not an engine call; the figure is the deliberation's own.
    grounding: 'off',
    providerFamilies: ['openai'],
  };
}

/**
 * The judge splits the seats, so a panel runs its whole course: seats, judge, a critique round, judge, synthesis.
 * Every reply takes `engineMs` and is logged per call tag with its served interval.
 */
function engineScript(state: { engineMs: number; served: Map<string, [number, number][]> }) {
  return (req: RecordedRequest): Reply => {
    const text = req.bodyText;
    const tag = TAG.exec(text)?.[1];
    const start = performance.now();
    if (tag) state.served.set(tag, [...(state.served.get(tag) ?? []), [start, start + state.engineMs]]);
    const delayMs = state.engineMs;
    if (text.includes(JUDGE_TAG)) {
      const labels = [...new Set([...text.matchAll(/Answer ([A-C]):/g)].map((m) => m[1]))];
      const verdict = {
        scores: Object.fromEntries(labels.map((l, i) => [l, 9 - i])),
        best: labels[0],
        why: `Answer ${labels[0]} is correct and complete.`,
        divergence: 0.5,
        converged: false,
        contested: null,
        factual_conflict: false,
      };
      return { ...openAiReply({ text: JSON.stringify(verdict), completionTokens: 60 }), delayMs };
    }
    if (text.includes(SYNTHESIS_TAG))
      return { ...openAiReply({ text: 'Synthesis: the sum of two odd numbers is even.', completionTokens: 12 }), delayMs };
    return { ...openAiReply({ text: 'An answer from the loopback engine: 2k+1 + 2m+1 = 2(k+m+1).', completionTokens: 20 }), delayMs };
  };
}

/**
 * The engines' critical path of one call from the intervals the loopback served it: calls that start before every
 * earlier one has ended ran side by side (a round's seats), a call that starts after that depends on them (the judge,
 * the next round). The path is the sum of each stage's longest call; a seat started late because our worker was busy
 * counts as ours, not the engine's.
 */
function criticalPathMs(intervals: readonly [number, number][]): number {
  const sorted = [...intervals].sort((a, b) => a[0] - b[0]);
  let total = 0;
  let stageEnd = -Infinity;
  let stageLongest = 0;
  for (const [s, e] of sorted) {
    if (s >= stageEnd) {
      total += stageLongest;
      stageLongest = 0;
    }
    stageEnd = Math.max(stageEnd, e);
    stageLongest = Math.max(stageLongest, e - s);
  }
  return total + stageLongest;
}

interface CallContext {
  tag?: string;
  key?: string;
  sentAt?: number;
}

interface Sample {
  tag: string;
  key: string;
  status: number;
  ms: number;
  wrongPath: boolean;
}

async function main(): Promise<void> {
  const loadAtStart = os.loadavg();
  const started = new Date();
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: repoRoot, stdio: 'inherit' });
  await startStack();
  const { db } = stack();
  const engine = { engineMs: 0, served: new Map<string, [number, number][]>() };
  const loopback = await startOpenAiLoopback(engineScript(engine));

  const org = await createOrganisation(db, { name: 'Load bench', creditMicros: 10n ** 15n });
  // Limits that no bench phase reaches: the figure is the stack's, not the per-key admission's.
  const { apiKey } = await createApiKey(db, {
    orgId: org.orgId,
    mode: 'live',
    limits: { requestsPerMinute: 10_000_000, concurrency: 100_000 },
  });
  const mode = await upsertMode(db, {
    ...SYSTEM_MODES[0],
    id: 'bench-openai-panel',
    ticker: 'BENCH:OPAI',
    name: 'Load bench panel (OpenAI loopback)',
    orgId: org.orgId,
    published: true,
    config: openAiPanel(),
  });

  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-load-'));
  const children: ChildProcess[] = [];
  const worker = forkProduct(
    'worker/main',
    stackProcessEnv(dataDir, { QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY, QUORUM_OPENAI_BASE_URL: loopback.baseUrl }),
  );
  children.push(worker.child);
  await worker.ready;
  const port = await freePort();
  const api = forkProduct('api/main', stackProcessEnv(dataDir, { PORT: String(port) }));
  children.push(api.child);
  await api.ready;
  const url = `http://127.0.0.1:${port}`;

  const pgPort = new URL(stack().dbUrl).port;
  const temporalPort = stack().env.connection.options.address.split(':').pop() ?? '';
  const groups: Record<string, number[]> = {
    api: [api.child.pid ?? -1],
    worker: [worker.child.pid ?? -1],
    temporal: findProcesses((comm, args) => comm.startsWith('temporal') && args.includes(temporalPort)),
    postgres: findProcesses((comm, args) => comm === 'postgres' && args.includes(pgPort)),
  };
  if (groups.temporal.length === 0 || groups.postgres.length === 0) throw new Error(`stack processes not found: ${JSON.stringify(groups)}`);

  const pgTransactions = async (): Promise<number> => {
    const { rows } = await db.raw<{ rows: { n: string }[] }>('select sum(xact_commit) as n from pg_stat_database');
    return Number(rows[0].n);
  };

  let seq = 0;
  const bodyFor = (target: Target, tag: string): string => {
    const content = `ref ${tag}: ${target === 'panel' ? PANEL_PROMPT : EXPRESS_PROMPT}`;
    return JSON.stringify({ model: mode.ticker, messages: [{ role: 'user', content }] });
  };

  const drive = (spec: PhaseSpec, onSample: (s: Sample) => void): Promise<autocannon.Result> =>
    new Promise((resolve, reject) => {
      const instance = autocannon(
        {
          url,
          method: 'POST',
          connections: spec.concurrency,
          amount: spec.calls,
          timeout: PHASE_MAX_S,
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          requests: [
            {
              setupRequest: (req, context): autocannon.Request => {
                const ctx = context as CallContext;
                ctx.tag = `t${seq++}`;
                ctx.key = randomUUID();
                ctx.sentAt = performance.now();
                return {
                  ...req,
                  path: spec.target === 'estimate' ? '/v1/estimate' : '/v1/chat/completions',
                  headers: { ...req.headers, 'idempotency-key': ctx.key },
                  body: bodyFor(spec.target, ctx.tag),
                };
              },
              onResponse: (status, body, context): void => {
                const ctx = context as CallContext;
                let wrongPath = false;
                if (status === 200 && spec.target !== 'estimate') {
                  const svc = (JSON.parse(body) as { svc?: { seats?: number; engines?: string[] } }).svc;
                  const lane = svc?.seats === 1 ? 'express' : 'panel';
                  wrongPath = lane !== spec.target || !(svc?.engines ?? []).every((e) => e.startsWith('openai/'));
                }
                onSample({ tag: ctx.tag ?? '', key: ctx.key ?? '', status, ms: performance.now() - (ctx.sentAt ?? 0), wrongPath });
              },
            },
          ],
        },
        (err: unknown, result: autocannon.Result) => (err ? reject(err instanceof Error ? err : new Error(String(err))) : resolve(result)),
      );
      setTimeout(() => instance.stop(), PHASE_MAX_S * 1000).unref();
    });

  const lastKeys: Partial<Record<Target, string>> = {};
  const runPhase = async (spec: PhaseSpec): Promise<PhaseResult> => {
    engine.engineMs = spec.engineMs;
    engine.served.clear();
    loopback.requests.length = 0;
    const samples: Sample[] = [];
    const xactsBefore = await pgTransactions();
    const before = sampleCpu(groups);
    const t0 = performance.now();
    const result = await drive(spec, (s) => samples.push(s));
    const seconds = (performance.now() - t0) / 1000;
    const cpu = cpuDelta(before, sampleCpu(groups));
    const xacts = (await pgTransactions()) - xactsBefore;
    const ok = samples.filter((s) => s.status === 200);
    const last = ok[ok.length - 1];
    if (last) lastKeys[spec.target] = last.key;
    const statuses: Record<string, number> = {};
    for (const s of samples) statuses[String(s.status)] = (statuses[String(s.status)] ?? 0) + 1;
    const paths = ok.map((s) => criticalPathMs(engine.served.get(s.tag) ?? []));
    const engineCalls = ok.map((s) => engine.served.get(s.tag)?.length ?? 0);
    const completions = spec.target !== 'estimate';
    const stackMs = cpu.api + cpu.worker + cpu.temporal + cpu.postgres;
    return {
      ...spec,
      completed: samples.length,
      seconds: round(seconds, 2),
      throughputPerS: round(samples.length / seconds),
      latencyMs: summary(ok.map((s) => s.ms)),
      overheadMs: completions ? summary(ok.map((s, i) => s.ms - paths[i])) : null,
      enginePathMs: completions ? summary(paths) : null,
      engineCallsPerCall: completions ? round(engineCalls.reduce((a, b) => a + b, 0) / Math.max(1, ok.length), 2) : null,
      statuses,
      connectionErrors: result.errors,
      timeouts: result.timeouts,
      wrongPath: ok.filter((s) => s.wrongPath).length,
      pgTransactionsPerCall: round(xacts / Math.max(1, samples.length)),
      cpuMsPerCall: Object.fromEntries(
        Object.entries({ ...cpu, stack: stackMs }).map(([k, v]) => [k, round(v / Math.max(1, samples.length), 2)]),
      ),
    };
  };

  // autocannon needs at least one call per connection.
  const n = (calls: number, concurrency: number): number => Math.max(concurrency, Math.round(calls * SCALE));
  // Warm-up: JIT, pools, the workflow cache and Temporal's task queues, unrecorded.
  for (const target of ['panel', 'express', 'estimate'] as const) await runPhase({ target, engineMs: 0, concurrency: 4, calls: n(40, 4) });
  const idle = { apiBytes: treeRss(api.child.pid ?? -1), workerBytes: treeRss(worker.child.pid ?? -1) };

  // Calls per phase at 1, 16 and 64 concurrent: enough for a p99 where it matters, a few minutes in all.
  const counts: Record<string, readonly [number, number, number]> = {
    'express 0': [60, 320, 512],
    'panel 0': [40, 240, 384],
    'estimate 0': [400, 1600, 3200],
    [`express ${SLOW_ENGINE_MS}`]: [20, 160, 384],
    [`panel ${SLOW_ENGINE_MS}`]: [12, 128, 256],
  };
  const plan: PhaseSpec[] = Object.entries(counts)
    .filter(([name]) => ONLY === undefined || ONLY.includes(name))
    .flatMap(([name, calls]) =>
      [1, 16, 64].map((concurrency, i) => {
        const [target, engineMs] = name.split(' ');
        return { target: target as Target, engineMs: Number(engineMs), concurrency, calls: n(calls[i], concurrency) };
      }),
    );

  const phases: PhaseResult[] = [];
  for (const spec of plan) {
    const r = await runPhase(spec);
    phases.push(r);
    console.error(`  ${r.target} ${r.engineMs} ms engine, ${r.concurrency} concurrent: done (${r.completed} calls, ${r.seconds} s)`);
  }

  // Workflow tasks and history events per call: what each call costs Temporal.
  const history = async (key: string | undefined): Promise<{ events: number; workflowTasks: number } | null> => {
    if (!key) return null;
    const events = (await stack().env.client.workflow.getHandle(workflowIds.deliberation(org.orgId, key)).fetchHistory()).events ?? [];
    return { events: events.length, workflowTasks: events.filter((e) => e.workflowTaskCompletedEventAttributes).length };
  };
  const histories = { panel: await history(lastKeys.panel), express: await history(lastKeys.express) };

  // Memory with IN_FLIGHT deliberations in flight at once on 500 ms engines: peak resident, sampled every 200 ms.
  const measureMemory = async () => {
    let peak = { apiBytes: 0, workerBytes: 0, sumBytes: 0 };
    const sampler = setInterval(() => {
      const a = treeRss(api.child.pid ?? -1);
      const w = treeRss(worker.child.pid ?? -1);
      if (a + w > peak.sumBytes) peak = { apiBytes: a, workerBytes: w, sumBytes: a + w };
    }, 200);
    const inFlight = await runPhase({ target: 'panel', engineMs: SLOW_ENGINE_MS, concurrency: IN_FLIGHT, calls: IN_FLIGHT });
    clearInterval(sampler);
    const mb = (b: number): number => round(b / 2 ** 20, 0);
    return {
      inFlight: IN_FLIGHT,
      idleMb: { api: mb(idle.apiBytes), worker: mb(idle.workerBytes), sum: mb(idle.apiBytes + idle.workerBytes) },
      peakMb: { api: mb(peak.apiBytes), worker: mb(peak.workerBytes), sum: mb(peak.sumBytes) },
      phase: inFlight,
    };
  };
  const memory = ONLY === undefined || ONLY.includes('memory') ? await measureMemory() : null;

  for (const c of children) c.kill('SIGTERM');
  await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(undefined) : c.once('exit', r)))));
  await loopback.close();
  await stopStack();
  fs.rmSync(dataDir, { recursive: true, force: true });

  printTable(phases, memory, histories);
  // A partial or profiled run is for looking, not for the record.
  if (ONLY !== undefined || SCALE !== 1 || CPU_PROF) return console.log('(partial or profiled run: no JSON written)');
  const file = writeResults(
    'load',
    {
      date: started.toISOString(),
      command: 'npm run bench:load',
      machine: machine(loadAtStart),
      notes:
        "overhead = end to end minus the engines' critical path of that call (per sequential stage, the longest call the loopback served); cpuMsPerCall sums utime+stime over each process tree (api, worker, temporal dev server, postgres with its backends), stack = their sum; bench = autocannon + the loopback engine",
      phases,
      histories,
      memory,
    },
    'latest.json',
  );
  console.log(`written: ${path.relative(process.cwd(), file)} and bench/results/latest.json`);
}

function printTable(
  phases: readonly PhaseResult[],
  memory: { inFlight: number; idleMb: Record<string, number>; peakMb: Record<string, number> } | null,
  histories: Record<string, { events: number; workflowTasks: number } | null>,
): void {
  const f = (v: number | undefined): string => (v === undefined || Number.isNaN(v) ? '—' : v.toFixed(1));
  console.log(
    'target    engine  conc  calls   req/s   p50 ms   p90 ms   p99 ms  ovh p50  ovh p90  ovh p99  engine/call  pg tx  CPU ms/call (stack: api+worker+temporal+pg)  statuses',
  );
  for (const r of phases) {
    const c = r.cpuMsPerCall;
    const errors = `${JSON.stringify(r.statuses)}${r.connectionErrors ? ` conn errors ${r.connectionErrors}` : ''}${r.wrongPath ? ` wrong path ${r.wrongPath}` : ''}`;
    console.log(
      [
        r.target.padEnd(9),
        `${r.engineMs}ms`.padStart(6),
        String(r.concurrency).padStart(5),
        String(r.completed).padStart(6),
        f(r.throughputPerS).padStart(7),
        f(r.latencyMs.p50).padStart(8),
        f(r.latencyMs.p90).padStart(8),
        f(r.latencyMs.p99).padStart(8),
        f(r.overheadMs?.p50).padStart(8),
        f(r.overheadMs?.p90).padStart(8),
        f(r.overheadMs?.p99).padStart(8),
        (r.engineCallsPerCall === null ? '—' : `${r.engineCallsPerCall} · ${f(r.enginePathMs?.p50)}ms`).padStart(12),
        f(r.pgTransactionsPerCall).padStart(6),
        `  ${f(c.stack)} (${f(c.api)}+${f(c.worker)}+${f(c.temporal)}+${f(c.postgres)}); bench ${f(c.bench)}`.padEnd(46),
        errors,
      ].join(' '),
    );
  }
  console.log(
    `history per call: panel ${histories.panel?.events ?? '—'} events / ${histories.panel?.workflowTasks ?? '—'} workflow tasks; express ${histories.express?.events ?? '—'} / ${histories.express?.workflowTasks ?? '—'}`,
  );
  if (!memory) return;
  console.log(
    `memory: API + worker resident idle ${memory.idleMb.sum} MB (api ${memory.idleMb.api}, worker ${memory.idleMb.worker}); with ${memory.inFlight} panel deliberations in flight (500 ms engines) peak ${memory.peakMb.sum} MB (api ${memory.peakMb.api}, worker ${memory.peakMb.worker}); target < 400 MB`,
  );
}

main().catch(async (err: unknown) => {
  console.error(err);
  await stopStack();
  process.exit(1);
});
