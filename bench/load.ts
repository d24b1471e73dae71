import { createHash } from 'node:crypto';
import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time';
import type { temporal } from '@temporalio/proto';
import autocannon from 'autocannon';
import pg from 'pg';
import { z } from 'zod';
import { createDb, type Db } from '../db/knex';
import { createApiKey } from '../db/repositories/api-keys';
import { upsertMode } from '../db/repositories/modes';
import { createOrganisation } from '../db/repositories/organisations';
import { SYSTEM_MODES, type ModeConfig } from '../domain/modes';
import { JUDGE_TAG, SYNTHESIS_TAG } from '../domain/prompts';
import { workflowIds } from '../domain/workflow-ids';
import { repoRoot } from '../infra/paths';
import { PROCESS_ENV_DEFAULTS, PROCESS_NODE_FLAGS } from '../infra/entry-point';
import { freePort } from '../infra/free-port';
import { readStackFile } from '../infra/stack-file';
import { resolveTemporalBinary } from '../stack/temporal-binary';
import { DYNAMIC_CONFIG_FILE, TEMPORAL_SERVER } from '../stack/temporal-cluster';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { OPENAI_TEST_KEY, openAiReply, startOpenAiLoopback } from '../test/fixtures/providers/openai';
import type { RecordedRequest, Reply } from '../test/fixtures/providers/loopback';
import { startCluster } from '../test/harness/cluster';
import { parseExposition, type Exposition } from '../test/harness/prometheus';
import { stack, startStack, stopStack } from '../test/harness/stack';
import { stackProcessEnv } from '../test/harness/worker';
import { criticalPathMs, drive as driveCalls, overheadParts, statusCounts, type Call, type OverheadParts } from './drive';
import { runFloor, type FloorResult } from './floor';
import {
  shapeFloorText,
  SLOW_ENGINE_MS,
  startShapeStack,
  type ShapeFloorResult,
  type ShapePhase,
  type ShapePhaseSpec,
  type ShapeStack,
} from './shape-floor';
import { measureGateway, type GatewayResult } from './gateway';
import {
  peerTable,
  targetText,
  type ClusterFigures,
  type PeerInput,
  type PeerRow,
  type PhaseFigures,
  type QuorumFigures,
} from './peer-table';
import { cpuDelta, findProcesses, sampleCpu, treeRss, type CpuSample } from './procs';
import { perCallKb, readMemorySplit, splitText, whileProbing, type MemorySplit } from './memory-split';
import { machine, round, writeResults } from './results';
import { summary } from './stats';
import { waitFigures, waitsText, type WaitFigures } from './waits';
import { loadConfig } from '../infra/config';
import { toolEnv } from '../stack/tool-env';

/**
 * DESIGN §13 through HTTP, as a client sees it (issue 16): the API with its worker in one process, compiled, as `npm
 * start` runs them (BENCH_LOAD_ROLE=split: apart, as production runs them), the real Temporal and Postgres, every seat and the staff on an OpenAI-compatible
 * loopback engine (the real adapter path, not `sim`), and HTTP load from autocannon on 127.0.0.1, bounded in count
 * and time. Per phase: latency percentiles, throughput, errors by status, overhead (end to end minus the engine
 * time the loopback served on the call's critical path) and CPU per call of every process of the stack.
 * Prints a table and writes JSON under bench/results/; asserts nothing.
 *   BENCH_LOAD_TARGETS='dev,cluster-1w,cluster-2w' (issue 30) runs the same phases on each stack in turn: `dev` (the
 *   default) is `npm start`'s, the Temporal CLI's dev server on SQLite; `cluster-Nw` is `npm run start:cluster`'s
 *   (test/harness/cluster.ts), the Temporal server on a Postgres of its own, with N workers and 1 API, so two cluster
 *   targets differ only in their workers. Several targets run only 'express 0' and 'panel 0' unless BENCH_LOAD_ONLY
 *   says otherwise (about 8 minutes for three), print them side by side and write bench/results/load-cluster-*.json.
 *   BENCH_LOAD_SCALE=0.1 runs a tenth of the calls (a quick check); BENCH_LOAD_IN_FLIGHT sets the memory phase's size;
 *   BENCH_LOAD_ONLY='express 0,express 500' runs only the phases so named (and no memory phase, unless the list names
 *   'memory'); BENCH_LOAD_CPU_PROF=<dir> has the dev target's API and worker (the bench forks those itself)
 *   write V8 CPU profiles there when they stop (open them in Chrome DevTools), to see where their CPU goes.
 * Beside Quorum, in the same run (issue 31): a plain gateway, LiteLLM's proxy (bench/gateway.ts), in front of the same
 * loopback engine, one call at a time and 16 concurrent, before any target starts; Quorum's workflow shapes with none
 * of its code (bench/shape-floor.ts), each right after the dev target's phase it is held to, so that drift in the
 * machine's speed moves both; Temporal's floor (bench/floor.ts) after everything stopped. Then each
 * target's table of issue 55's targets (bench/peer-table.ts): Quorum over the shape (express overhead p50 alone, CPU a
 * call alone and calls/s at 16; a panel's CPU and panels/s at 16 with instant engines, its overhead p99 at 16 with
 * 500 ms engines), with the floor's and LiteLLM's figures beside it as context; the memory phase's peak and the
 * estimate's p50 against their bounds; each cluster target's CPU over the dev target's (rows not run without a cluster
 * target). BENCH_LOAD_PEERS=off skips the gateway, the floor and the shapes: the table's rows over the shape say not
 * run.
 * The memory phase (issue 42 item 4) prints what one deliberation in flight costs, (peak − idle) / in flight, and
 * where: the dev target's API and worker start with bench/heap-probe.cjs preloaded, so each of their V8 isolates (the
 * main thread's and the SDK's workflow threads') reports its heap, and the rest of their anonymous memory is native.
 * They start with the product's Node flags (PROCESS_NODE_FLAGS); BENCH_LOAD_NODE_OPTIONS='--max-semi-space-size=8' starts
 * them (and only them) with those instead, '' with none: a lever's run.
 * BENCH_LOAD_ENGINE_SPREAD=0.2 spreads each engine reply's delay evenly over ±20% of the phase's (delayFor).
 * BENCH_LOAD_TEMPORAL_PG='synchronous_commit=off,…' sets those on a cluster target's Postgres for Temporal (ALTER SYSTEM,
 * then a reload) once it is up: a lever of issue 42 item 5, measured against a run without. Two more such levers:
 * BENCH_LOAD_TEMPORAL_SHARDS=1 creates a cluster target's Temporal with that many history shards (each target's cluster
 * is new, so its persistence is created with them), and BENCH_LOAD_TEMPORAL_DYNAMIC='history.persistenceMaxQPS=90000,…'
 * starts its Temporal server on deploy/temporal/dynamicconfig.yaml with those keys added or replaced (the server's own
 * key names, go.temporal.io/server's common/dynamicconfig/constants.go; numbers, booleans or durations such as 10s).
 */
const SCALE = Number(process.env.BENCH_LOAD_SCALE ?? 1);
const IN_FLIGHT = Number(process.env.BENCH_LOAD_IN_FLIGHT ?? 500);
/** No phase runs longer than this, whatever its count. */
const PHASE_MAX_S = 120;
/** Engines this slow make a panel of about 26 s, near the spec's p50 of 28.5 s: its engine calls heartbeat to Temporal as real ones do. */
const REAL_ENGINE_MS = 5_000;
const ONLY = process.env.BENCH_LOAD_ONLY?.split(',').map((name) => name.trim());
/** The dev target's processes: `all` (default), `npm start`'s API with its worker in one process; `split`, apart. */
const ROLE = z.enum(['all', 'split']).parse(process.env.BENCH_LOAD_ROLE ?? 'all');
const StackName = z.enum(['dev', 'cluster-1w', 'cluster-2w']);
type StackName = z.infer<typeof StackName>;
/** The stacks BENCH_LOAD_TARGETS names: a cluster's worker count, and what the tables call each. */
const STACKS: Record<StackName, { clusterWorkers?: number; label: string }> = {
  dev: {
    label:
      ROLE === 'all'
        ? 'dev server (Temporal CLI dev server on SQLite; API and worker in one process, as npm start runs them)'
        : 'dev server (Temporal CLI dev server on SQLite; 1 worker, 1 API apart: BENCH_LOAD_ROLE=split)',
  },
  'cluster-1w': { clusterWorkers: 1, label: `cluster, 1 worker (Temporal server ${TEMPORAL_SERVER.version} on Postgres; 1 API)` },
  'cluster-2w': { clusterWorkers: 2, label: `cluster, 2 workers (Temporal server ${TEMPORAL_SERVER.version} on Postgres; 1 API)` },
};
const TARGETS = z
  .array(StackName)
  .min(1)
  .parse((process.env.BENCH_LOAD_TARGETS ?? 'dev').split(',').map((name) => name.trim()));
/**
 * The phases run: BENCH_LOAD_ONLY's ('panel 0' names all three concurrencies, 'panel 0@16' one), else every phase
 * on one target, and on several what fits about 10 minutes for three: both lanes alone and at 16 concurrent with
 * instant engines, and the near-real-latency panels.
 */
const PHASES =
  ONLY ?? (TARGETS.length > 1 ? ['express 0@1', 'express 0@16', 'panel 0@1', 'panel 0@16', `panel ${REAL_ENGINE_MS}`] : undefined);
/**
 * Calls per phase at 1, 16 and 64 concurrent: enough for a p99 where it matters, a few minutes in all. null: not run
 * at that concurrency (the real-latency panels take about 26 s each: only 64 at once, in 30 s). The shape beside each
 * phase issue 55 holds to one (express 0 at 1 and 16, panel 0 and panel 500 at 16) makes the phase's own count
 * (besideShapes), so neither side's per-call figures carry more of a phase's start and end than the other's.
 */
const PHASE_CALLS: Record<string, readonly [number | null, number | null, number | null]> = {
  'express 0': [300, 600, 512],
  'panel 0': [40, 600, 384],
  'estimate 0': [400, 1600, 3200],
  [`express ${SLOW_ENGINE_MS}`]: [20, 160, 384],
  [`panel ${SLOW_ENGINE_MS}`]: [12, 300, 256],
  [`panel ${REAL_ENGINE_MS}`]: [null, null, 64],
};
/** A phase's calls at BENCH_LOAD_SCALE; autocannon needs at least one call per connection. */
const scaledCalls = (calls: number, concurrency: number): number => Math.max(concurrency, Math.round(calls * SCALE));
/** Background CPU of each process, measured with nothing in flight, so a per-call figure can be read against it. */
const IDLE_WINDOW_MS = 10_000;
/** How long a phase's counters are given to reach their readers (the Temporal server reports its metrics and a Postgres backend its statistics about once a second). */
const COUNTERS_SETTLE_MS = 2_000;
const CPU_PROF = process.env.BENCH_LOAD_CPU_PROF;
const NODE_OPTIONS = process.env.BENCH_LOAD_NODE_OPTIONS;
/** A lever's `name=value,…` list from `variable`, each name and value checked against its pattern. */
function settingsList(variable: string, name: RegExp, value: RegExp): { name: string; value: string }[] {
  return (process.env[variable] ?? '')
    .split(',')
    .filter((setting) => setting.trim() !== '')
    .map((setting) => {
      const [n, v] = setting.split('=').map((part) => part.trim());
      if (!name.test(n) || v === undefined || !value.test(v))
        throw new Error(`${variable}: not ${name.source}=${value.source}: ${setting}`);
      return { name: n, value: v };
    });
}
const TEMPORAL_PG_SETTINGS = settingsList('BENCH_LOAD_TEMPORAL_PG', /^[a-z_.]+$/, /^.*$/);
const TEMPORAL_SHARDS = z
  .string()
  .regex(/^[1-9]\d{0,4}$/, 'BENCH_LOAD_TEMPORAL_SHARDS: a shard count')
  .optional()
  .parse(process.env.BENCH_LOAD_TEMPORAL_SHARDS);
/** Numbers, booleans or durations, as the server's YAML takes them. */
const TEMPORAL_DYNAMIC = settingsList('BENCH_LOAD_TEMPORAL_DYNAMIC', /^[a-z]+\.[A-Za-z]+$/, /^(\d+(\.\d+)?(ms|s|m|h)?|true|false)$/).map(
  ({ name, value }) => ({
    key: name,
    value: /^\d+(\.\d+)?$/.test(value) ? Number(value) : value === 'true' ? true : value === 'false' ? false : value,
  }),
);
/** BENCH_LOAD_PEERS=off skips the gateway and the floor (issue 31), which no change to Quorum moves: for back-to-back lever runs. */
const PEERS = process.env.BENCH_LOAD_PEERS !== 'off';
/** Calls per floor phase at scale 1 (the tool's own default); its 16-concurrent phases make twice as many. */
const FLOOR_N = 300;
/** Node refuses --cpu-prof in NODE_OPTIONS: it goes on the command line. */
const profileArgs: readonly string[] = CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(CPU_PROF)}`] : [];

/** Each isolate of a process so started reports its heap (bench/heap-probe.cjs): the memory phase's split. */
const heapProbeArgs: readonly string[] = ['--require', path.join(repoRoot, 'bench', 'heap-probe.cjs')];

/**
 * An entry point as its own process, compiled, as `npm start` runs it (under tsx a process carries the transpiler
 * and its caches too, ~40 MB more resident), with `profileArgs` and the heap probe added.
 */
function forkProduct(module: string, env: NodeJS.ProcessEnv): { child: ChildProcess; ready: Promise<void> } {
  const child = fork(path.join(repoRoot, 'dist', `${module}.js`), [], {
    // The product's own Node flags, unless BENCH_LOAD_NODE_OPTIONS gives others ('' for none): flags on the command line
    // win over NODE_OPTIONS. Those options reach the product's processes alone (in NODE_OPTIONS a heap cap would reach
    // the build's tsc too).
    execArgv: [...(NODE_OPTIONS === undefined ? PROCESS_NODE_FLAGS : []), ...profileArgs, ...heapProbeArgs],
    env: { ...PROCESS_ENV_DEFAULTS, ...env, ...(NODE_OPTIONS ? { NODE_OPTIONS } : {}) },
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

type CallKind = 'panel' | 'express' | 'estimate';

interface PhaseSpec {
  target: CallKind;
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
  /**
   * The same over the calls sent after the phase's first answer: without the first wave, whose calls the driver
   * sends all at once (a burst of `concurrency` starts that identical engines then keep in step every round).
   */
  overheadAfterFirstWaveMs: ReturnType<typeof summary> | null;
  /** The loopback's served time on the critical path, per call. */
  enginePathMs: ReturnType<typeof summary> | null;
  /** Where the overhead lay on the calls' timelines (bench/drive.ts): each part's p50 and p99, and its mean over the calls whose overhead is at or past the p99. */
  overheadParts: { p50: OverheadParts; p99: OverheadParts; slowest: OverheadParts } | null;
  /**
   * The slowest 1% by overhead (at least 3) and 5 calls at the median, each read against its workflow's history
   * (`historyTimeline`): the means of each span, ms. Null for estimates.
   */
  timelines: { slowest: HistoryTimeline; median: HistoryTimeline } | null;
  engineCallsPerCall: number | null;
  statuses: Record<string, number>;
  /** autocannon's connection errors and timeouts (no HTTP status). */
  connectionErrors: number;
  timeouts: number;
  /** 200s whose receipt shows the other lane or an engine that is not the loopback's: a figure of the wrong path. */
  wrongPath: number;
  cpuMsPerCall: CpuSample;
  /** The same less what each process uses idle over the phase's length: the per-call cost at a rate where background work is negligible. */
  cpuMsPerCallNetOfIdle?: CpuSample;
  /** Postgres transactions committed per call in Quorum's database (API, worker and this bench's few reads), from pg_stat_database. */
  pgTransactionsPerCall: number;
  /** The same in Temporal's own Postgres (the cluster's; the dev server keeps SQLite in its process): null there. */
  temporalPgTransactionsPerCall: number | null;
  /** The Temporal server's persistence requests per call by operation (its Prometheus counters; visibility's prefixed). */
  temporalPersistencePerCall: {
    total: number;
    byOperation: Record<string, number>;
    /** Mean latency of each operation in the phase, ms (on this shared machine, CPU queueing included). */
    meanMsByOperation: Record<string, number>;
  } | null;
  /** Where the phase's calls waited, from the worker's own counters (bench/waits.ts); null where the target serves none. */
  waits: WaitFigures | null;
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
 * A reply's delay: `engineMs`, or with BENCH_LOAD_ENGINE_SPREAD=s spread evenly over engineMs × [1 − s, 1 + s] (the
 * same mean), drawn from the call's tag and its count of replies so far, so two runs draw the same delays. Identical
 * engines answer a phase's concurrent calls at the same moment, so their next steps reach the stack in bursts; spread
 * engines, as real ones are, do not (issue 42 item 2: what the panel's tail is made of).
 */
const ENGINE_SPREAD = z.coerce
  .number()
  .min(0)
  .max(1)
  .parse(process.env.BENCH_LOAD_ENGINE_SPREAD ?? 0);
function delayFor(engineMs: number, tag: string, nth: number): number {
  if (ENGINE_SPREAD === 0 || engineMs === 0) return engineMs;
  const unit = createHash('sha256').update(`${tag}#${nth}`).digest().readUInt32BE(0) / 0xffffffff;
  return Math.round(engineMs * (1 + ENGINE_SPREAD * (2 * unit - 1)));
}

/**
 * The judge splits the seats, so a panel runs its whole course: seats, judge, a critique round, judge, synthesis.
 * Every reply takes its delay (`delayFor`) and is logged per call tag with its served interval.
 */
function engineScript(state: { engineMs: number; served: Map<string, [number, number][]> }) {
  return (req: RecordedRequest): Reply => {
    const text = req.bodyText;
    const tag = TAG.exec(text)?.[1];
    const start = performance.now();
    const earlier = tag ? (state.served.get(tag) ?? []) : [];
    const delayMs = tag ? delayFor(state.engineMs, tag, earlier.length) : state.engineMs;
    if (tag) state.served.set(tag, [...earlier, [start, start + delayMs]]);
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

/** An answered completion with its overhead and where that lay (bench/drive.ts `overheadParts`), worked out once. */
interface TimedCall {
  call: Call;
  overheadMs: number;
  parts: OverheadParts;
}

/** Overhead over the calls sent after the phase's first answer (PhaseResult.overheadAfterFirstWaveMs); null if none was. */
function afterFirstWave(timed: readonly TimedCall[]): PhaseResult['overheadAfterFirstWaveMs'] {
  const firstAnswer = Math.min(...timed.map((t) => t.call.answeredAt));
  const later = timed.filter((t) => t.call.sentAt > firstAnswer).map((t) => t.overheadMs);
  return later.length > 0 ? summary(later) : null;
}

const PARTS = ['headMs', 'gapsMs', 'staggerMs', 'tailMs'] as const;

/** The phase's overhead parts: each part's p50 and p99 over the calls, and their means over the slowest 1% by overhead. */
function partsOf(calls: readonly TimedCall[]): PhaseResult['overheadParts'] {
  if (calls.length === 0) return null;
  const byPart = (among: readonly TimedCall[], pick: (values: number[]) => number): OverheadParts => {
    const out = { headMs: 0, gapsMs: 0, staggerMs: 0, tailMs: 0 };
    for (const part of PARTS) out[part] = round(pick(among.map((c) => c.parts[part])), 1);
    return out;
  };
  const p99 = summary(calls.map((c) => c.overheadMs)).p99;
  const mean = (values: number[]): number => values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
  return {
    p50: byPart(calls, (v) => summary(v).p50),
    p99: byPart(calls, (v) => summary(v).p99),
    slowest: byPart(
      calls.filter((c) => c.overheadMs >= p99),
      mean,
    ),
  };
}

/** One line: the overhead's parts at p50, p99 and in the slowest 1%. */
function partsText(p: NonNullable<PhaseResult['overheadParts']>): string {
  const one = (o: OverheadParts): string => `head ${o.headMs}, gaps ${o.gapsMs}, stagger ${o.staggerMs}, tail ${o.tailMs}`;
  return `overhead parts ms: p50 ${one(p.p50)}; p99 ${one(p.p99)}; slowest 1% (mean) ${one(p.slowest)}`;
}

/**
 * One call read against its workflow's history, on the machine's wall clock (the bench's `performance` clock is
 * converted; the Temporal server stamps its events on the same machine):
 *   - toStartMs: sent until the server stamped the start (HTTP, the key, the claim, the start's request);
 *   - toEngineMs: the start until the first engine call (the start's write, the eager task, prepare, dispatch);
 *   - toCompleteMs: the last engine answer until the server stamped the workflow task's completion (settle, the end);
 *   - toAnswerMs: that completion until the client has the answer (its write, the API's result poll, the response);
 *   - crowd: the phase's other calls that were sent, or had their last engine answer, within CROWD_MS of its send:
 *     the starts and ends the stack served at the same moment as its own start.
 */
interface HistoryTimeline {
  calls: number;
  crowd: number;
  toStartMs: number;
  toEngineMs: number;
  toCompleteMs: number;
  toAnswerMs: number;
}

const CROWD_MS = 100;

/** When a call's first engine call started and its last engine answer came, from its overhead's head and tail. */
const firstEngineAt = (t: TimedCall): number => t.call.sentAt + t.parts.headMs;
const lastEngineAt = (t: TimedCall): number => t.call.answeredAt - t.parts.tailMs;

function historyTimeline(calls: { timed: TimedCall; events: temporal.api.history.v1.IHistoryEvent[]; crowd: number }[]): HistoryTimeline {
  const wall = (t: number): number => performance.timeOrigin + t;
  const spans = calls.map(({ timed, events, crowd }) => {
    const started = tsToMs(events.find((e) => e.workflowExecutionStartedEventAttributes)?.eventTime);
    const completed = tsToMs([...events].reverse().find((e) => e.workflowTaskCompletedEventAttributes)?.eventTime);
    return [
      started - wall(timed.call.sentAt),
      wall(firstEngineAt(timed)) - started,
      completed - wall(lastEngineAt(timed)),
      wall(timed.call.answeredAt) - completed,
      crowd,
    ];
  });
  const mean = (i: number): number => round(spans.reduce((n, s) => n + s[i], 0) / Math.max(1, spans.length), 1);
  return { calls: spans.length, toStartMs: mean(0), toEngineMs: mean(1), toCompleteMs: mean(2), toAnswerMs: mean(3), crowd: mean(4) };
}

function timelineText(t: HistoryTimeline): string {
  return `${t.crowd} other starts and ends within ${CROWD_MS} ms of its send; to the start ${t.toStartMs}, start to first engine ${t.toEngineMs}, last engine to completion ${t.toCompleteMs}, completion to answer ${t.toAnswerMs}`;
}

interface Sample extends Call {
  wrongPath: boolean;
}

/** The processes a phase counts the CPU of, each group every process tree under its root pids. */
const GROUPS = ['api', 'worker', 'temporal', 'temporalPg', 'postgres'] as const;
type Group = (typeof GROUPS)[number];

/**
 * One stack the phases run against, whichever its topology: where its API listens, its databases and Temporal, and
 * which processes are which, so one phase runner measures them all.
 */
interface StackTarget {
  apiUrl: string;
  /** Quorum's database. */
  db: Db;
  temporal: Client;
  groups: Record<Group, number[]>;
  /** Transactions committed so far in Quorum's Postgres and in Temporal's (null: the dev server has none). */
  pgTransactions(): Promise<{ quorum: number; temporal: number | null }>;
  /** The Temporal server's persistence requests so far by operation, with their summed latency; null where it serves no metrics. */
  persistenceRequests(): Promise<Record<string, { requests: number; seconds: number }> | null>;
  /** The worker's `/metrics` (ours and the Temporal SDK's); null where the bench does not read them (the cluster). */
  workerMetrics(): Promise<Exposition | null>;
  /** Where the API's and worker's isolates report their heaps (bench/heap-probe.cjs); null where the bench did not start them. */
  heapProbeDir: string | null;
  stop(): Promise<void>;
}

/** The Temporal server's persistence requests so far by operation (visibility's prefixed), with their summed latency. */
async function persistenceRequests(metricsUrl: string): Promise<Record<string, { requests: number; seconds: number }>> {
  const exposition = parseExposition(await (await fetch(metricsUrl)).text());
  const byOperation: Record<string, { requests: number; seconds: number }> = {};
  const families: Record<string, [string, 'requests' | 'seconds']> = {
    persistence_requests: ['', 'requests'],
    persistence_latency_sum: ['', 'seconds'],
    visibility_persistence_requests: ['visibility ', 'requests'],
    visibility_persistence_latency_sum: ['visibility ', 'seconds'],
  };
  for (const sample of exposition.samples) {
    const family = families[sample.name];
    if (!family) continue;
    const op = `${family[0]}${sample.labels.operation ?? '?'}`;
    byOperation[op] ??= { requests: 0, seconds: 0 };
    byOperation[op][family[1]] += sample.value;
  }
  return byOperation;
}

async function committed(query: (sql: string) => Promise<{ rows: { n: string }[] }>): Promise<number> {
  const { rows } = await query('select sum(xact_commit) as n from pg_stat_database');
  return Number(rows[0].n);
}

/** Stops what was started, latest first, whatever fails. */
async function stopAll(stops: (() => Promise<unknown>)[]): Promise<void> {
  for (const stop of stops.reverse()) await stop().catch((err: unknown) => console.error(err));
}

/** `npm start`'s topology: the test harness's Temporal dev server and Postgres, and the compiled worker and API forked here. */
async function startDevTarget(engineEnv: NodeJS.ProcessEnv): Promise<StackTarget> {
  const stops: (() => Promise<unknown>)[] = [stopStack];
  try {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-load-'));
    // Postgres runs as its own user when we are root: it must be able to enter the folder.
    fs.chmodSync(dataDir, 0o755);
    stops.push(async () => fs.rmSync(dataDir, { recursive: true, force: true }));
    // Temporal's SQLite in a file with `npm start`'s settings, not the tests' in-memory one.
    const temporalMetricsPort = await freePort();
    await startStack({ dbFile: path.join(dataDir, 'temporal.db'), metricsPort: temporalMetricsPort });
    const { db, dbUrl, env } = stack();
    const heapProbeDir = path.join(dataDir, 'heap-probe');
    fs.mkdirSync(heapProbeDir);
    const fork = async (module: string, extra: NodeJS.ProcessEnv): Promise<number> => {
      const { child, ready } = forkProduct(module, stackProcessEnv(dataDir, { ...extra, BENCH_HEAP_PROBE_DIR: heapProbeDir }));
      stops.push(async () => {
        const exited = new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : child.once('exit', resolve)));
        child.kill('SIGTERM');
        await exited;
      });
      await ready;
      return child.pid ?? -1;
    };
    const port = await freePort();
    const metricsPort = await freePort();
    const withMetrics = { ...engineEnv, QUORUM_WORKER_METRICS_PORT: String(metricsPort) };
    // `npm start`'s one process (QUORUM_ROLE=all), or BENCH_LOAD_ROLE=split: production's worker and API apart.
    const worker = ROLE === 'split' ? await fork('worker/main', withMetrics) : undefined;
    const api = await fork('api/main', {
      ...(ROLE === 'split' ? engineEnv : withMetrics),
      PORT: String(port),
      QUORUM_ROLE: ROLE === 'split' ? 'api' : 'all',
    });
    const pgPort = new URL(dbUrl).port;
    const temporalPort = env.connection.options.address.split(':').pop() ?? '';
    const groups: Record<Group, number[]> = {
      api: [api],
      worker: worker === undefined ? [] : [worker],
      temporal: findProcesses((comm, args) => comm.startsWith('temporal') && args.includes(temporalPort)),
      temporalPg: [],
      postgres: findProcesses((comm, args) => comm === 'postgres' && args.includes(pgPort)),
    };
    if (groups.temporal.length === 0 || groups.postgres.length === 0)
      throw new Error(`stack processes not found: ${JSON.stringify(groups)}`);
    return {
      apiUrl: `http://127.0.0.1:${port}`,
      db,
      temporal: env.client,
      groups,
      pgTransactions: async () => ({ quorum: await committed((sql) => db.raw(sql)), temporal: null }),
      persistenceRequests: () => persistenceRequests(`http://127.0.0.1:${temporalMetricsPort}/metrics`),
      workerMetrics: async () => parseExposition(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()),
      heapProbeDir,
      stop: () => stopAll(stops),
    };
  } catch (err) {
    await stopAll(stops);
    throw err;
  }
}

/** An option's value in a command line (`-p 5432` → '5432'). */
function optionOf(args: readonly string[], flag: string): string | undefined {
  const i = args.indexOf(flag);
  return i < 0 ? undefined : args[i + 1];
}

/** BENCH_LOAD_TEMPORAL_SHARDS and BENCH_LOAD_TEMPORAL_DYNAMIC as the supervisor's settings (docs/configuration.md). */
function temporalLeverEnv(): { env: NodeJS.ProcessEnv; scratch?: string } {
  const env: NodeJS.ProcessEnv = TEMPORAL_SHARDS === undefined ? {} : { QUORUM_CLUSTER_HISTORY_SHARDS: TEMPORAL_SHARDS };
  if (TEMPORAL_DYNAMIC.length === 0) return { env };
  const shipped = z.record(z.string(), z.unknown()).parse(parseYaml(fs.readFileSync(DYNAMIC_CONFIG_FILE, 'utf8')) ?? {});
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-bench-dynamic-'));
  const file = path.join(scratch, 'dynamicconfig.yaml');
  const added = Object.fromEntries(TEMPORAL_DYNAMIC.map(({ key, value }) => [key, [{ value }]]));
  fs.writeFileSync(file, stringifyYaml({ ...shipped, ...added }));
  return { env: { ...env, QUORUM_CLUSTER_DYNAMIC_CONFIG_FILE: file }, scratch };
}

/** `npm run start:cluster`'s topology with `workers` workers and one API, through the lead's harness. */
async function startClusterTarget(workers: number, engineEnv: NodeJS.ProcessEnv): Promise<StackTarget> {
  // The dev target's processes log at this level too (stackProcessEnv).
  const levers = temporalLeverEnv();
  const cluster = await startCluster({ workers, apis: 1, env: { ...engineEnv, QUORUM_LOG_LEVEL: 'error', ...levers.env } });
  const { scratch } = levers;
  const stops: (() => Promise<unknown>)[] = [() => cluster.stop()];
  // Last, once the server that reads it has stopped (stops run in reverse).
  if (scratch !== undefined) stops.unshift(() => fs.promises.rm(scratch, { recursive: true, force: true }));
  try {
    const namespace = readStackFile(path.join(cluster.dataDir, 'stack.json'))?.namespace;
    const metricsUrl = /Temporal server (http:\S+\/metrics)/.exec(cluster.output())?.[1];
    const temporalServer = cluster.temporalServer();
    const [api] = cluster.apis();
    if (!namespace || !metricsUrl || temporalServer === undefined || !api) throw new Error(`cluster not as expected:\n${cluster.output()}`);
    // Both Postgres servers are the cluster's (pg_ctl starts them: not the supervisor's children); ours is on DATABASE_URL's port.
    const inCluster = new Set(cluster.processes());
    const argsOf = (pid: number): string[] => fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    const postmasters = findProcesses((comm, args) => comm === 'postgres' && args.includes('-D')).filter((pid) => inCluster.has(pid));
    const ours = postmasters.filter((pid) => optionOf(argsOf(pid), '-p') === new URL(cluster.databaseUrl).port);
    const temporals = postmasters.filter((pid) => !ours.includes(pid));
    if (ours.length !== 1 || temporals.length !== 1)
      throw new Error(`Postgres servers not found: ours ${ours.join()}, Temporal's ${temporals.join()}`);
    const temporalPgArgs = argsOf(temporals[0]);
    // Its own socket, where the embedded Postgres trusts local connections: no password needed here.
    const temporalPg = new pg.Pool({
      host: temporalPgArgs.find((a) => a.startsWith('unix_socket_directories='))?.split('=')[1],
      port: Number(optionOf(temporalPgArgs, '-p')),
      user: 'quorum',
      database: 'temporal',
      max: 1,
    });
    stops.push(() => temporalPg.end());
    for (const { name, value } of TEMPORAL_PG_SETTINGS) await temporalPg.query(`alter system set ${name} = '${value.replace(/'/g, "''")}'`);
    if (TEMPORAL_PG_SETTINGS.length > 0) await temporalPg.query('select pg_reload_conf()');
    // The lever took: history acquires every shard at start, each a row.
    if (TEMPORAL_SHARDS !== undefined) {
      const shards = (await temporalPg.query<{ n: string }>('select count(*)::text as n from shards')).rows[0]?.n;
      if (shards !== TEMPORAL_SHARDS) throw new Error(`Temporal has ${shards} shards, not ${TEMPORAL_SHARDS}`);
    }
    const db = createDb(cluster.databaseUrl, 4);
    stops.push(() => db.destroy());
    const connection = await Connection.connect({ address: cluster.temporalAddress });
    stops.push(() => connection.close());
    return {
      apiUrl: api.url,
      db,
      temporal: new Client({ connection, namespace }),
      groups: { api: [api.pid], worker: cluster.workers(), temporal: [temporalServer], temporalPg: temporals, postgres: ours },
      pgTransactions: async () => ({
        quorum: await committed((sql) => db.raw(sql)),
        temporal: await committed((sql) => temporalPg.query<{ n: string }>(sql)),
      }),
      workerMetrics: () => Promise.resolve(null),
      heapProbeDir: null,
      persistenceRequests: () => persistenceRequests(metricsUrl),
      stop: () => stopAll(stops),
    };
  } catch (err) {
    await stopAll(stops);
    throw err;
  }
}

type EngineState = Parameters<typeof engineScript>[0];

interface MemoryResult {
  inFlight: number;
  idleMb: Record<string, number>;
  peakMb: Record<string, number>;
  /** (peak − idle) / in flight, MB a deliberation: what one in flight costs the API and worker. */
  perCallMb: number;
  /** Where it is, idle and at the peak, and the difference per call in kB (null without the heap probe). */
  split: { idle: MemorySplit; peak: MemorySplit; perCallKb: Record<string, number> } | null;
  phase: PhaseResult;
}

interface TargetResult {
  target: StackName;
  label: string;
  /** Load average when this target started and when it stopped: the machine is shared. */
  loadAverage: { start: number[]; end: number[] };
  /** CPU each process group used per second with nothing in flight, after the warm-up. */
  idleCpuMsPerS: CpuSample;
  phases: PhaseResult[];
  histories: Record<'panel' | 'express', { events: number; workflowTasks: number } | null>;
  memory: MemoryResult | null;
}

/** Every phase of the plan on one target, from the same org, key and mode setup: the one runner all targets share. */
async function measure(
  name: StackName,
  target: StackTarget,
  engine: EngineState,
  loopback: { requests: RecordedRequest[] },
  beside?: (spec: PhaseSpec) => Promise<void>,
): Promise<TargetResult> {
  const loadAtStart = os.loadavg();
  const { db, groups } = target;
  const org = await createOrganisation(db, { name: 'Load bench', creditMicros: 10n ** 15n });
  // Limits that no bench phase reaches: the figure is the stack's, not the per-key admission's.
  const { apiKey } = await createApiKey(db, {
    orgId: org.orgId,
    keyKind: 'live',
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

  const bodyFor = (kind: CallKind, tag: string): string => {
    const content = `ref ${tag}: ${kind === 'panel' ? PANEL_PROMPT : EXPRESS_PROMPT}`;
    return JSON.stringify({ model: mode.ticker, messages: [{ role: 'user', content }] });
  };

  const drive = (spec: PhaseSpec, onSample: (s: Sample) => void): Promise<autocannon.Result> =>
    driveCalls(
      {
        url: target.apiUrl,
        path: spec.target === 'estimate' ? '/v1/estimate' : '/v1/chat/completions',
        concurrency: spec.concurrency,
        calls: spec.calls,
        maxS: PHASE_MAX_S,
        headers: { authorization: `Bearer ${apiKey}` },
        request: (tag, key) => ({ body: bodyFor(spec.target, tag), headers: { 'idempotency-key': key } }),
      },
      (call, body) => {
        let wrongPath = false;
        if (call.status === 200 && spec.target !== 'estimate') {
          const svc = (JSON.parse(body) as { svc?: { seats?: number; engines?: string[] } }).svc;
          const lane = svc?.seats === 1 ? 'express' : 'panel';
          wrongPath = lane !== spec.target || !(svc?.engines ?? []).every((e) => e.startsWith('openai/'));
        }
        onSample({ ...call, wrongPath });
      },
    );

  const perCall = (v: number, calls: number, digits = 1): number => round(v / Math.max(1, calls), digits);
  const timelinesOf = async (timed: readonly TimedCall[]): Promise<PhaseResult['timelines']> => {
    const byOverhead = [...timed].sort((a, b) => a.overheadMs - b.overheadMs);
    const moments = timed.flatMap((t) => [t.call.sentAt, lastEngineAt(t)]);
    const crowdAt = (call: Call): number => moments.filter((at) => Math.abs(at - call.sentAt) <= CROWD_MS).length - 1;
    const read = async (picked: readonly TimedCall[]): Promise<HistoryTimeline> =>
      historyTimeline(
        await Promise.all(
          picked.map(async (t) => ({
            timed: t,
            crowd: crowdAt(t.call),
            events: (await target.temporal.workflow.getHandle(workflowIds.deliberation(org.orgId, t.call.key)).fetchHistory()).events ?? [],
          })),
        ),
      );
    const middle = Math.floor(byOverhead.length / 2);
    return {
      slowest: await read(byOverhead.slice(-Math.max(3, Math.ceil(byOverhead.length / 100)))),
      median: await read(byOverhead.slice(Math.max(0, middle - 2), middle + 3)),
    };
  };
  const lastKeys: Partial<Record<CallKind, string>> = {};
  const runPhase = async (spec: PhaseSpec): Promise<PhaseResult> => {
    engine.engineMs = spec.engineMs;
    engine.served.clear();
    loopback.requests.length = 0;
    const samples: Sample[] = [];
    const [xactsBefore, persistenceBefore] = [await target.pgTransactions(), await target.persistenceRequests()];
    // Scraped last before the phase: the event-loop lag histogram restarts at each scrape.
    const metricsBefore = await target.workerMetrics();
    const before = sampleCpu(groups);
    console.error(`  ${spec.target} ${spec.engineMs} ms engine, ${spec.concurrency} concurrent: running`);
    const t0 = performance.now();
    const result = await drive(spec, (s) => samples.push(s));
    const seconds = (performance.now() - t0) / 1000;
    const cpu = cpuDelta(before, sampleCpu(groups));
    const metricsAfter = metricsBefore && (await target.workerMetrics());
    await new Promise((resolve) => setTimeout(resolve, COUNTERS_SETTLE_MS));
    const [xacts, persistence] = [await target.pgTransactions(), await target.persistenceRequests()];
    const ok = samples.filter((s) => s.status === 200);
    const last = ok[ok.length - 1];
    if (last) lastKeys[spec.target] = last.key;
    const statuses = statusCounts(samples);
    const paths = ok.map((s) => criticalPathMs(engine.served.get(s.tag) ?? []));
    const engineCalls = ok.map((s) => engine.served.get(s.tag)?.length ?? 0);
    const completions = spec.target !== 'estimate';
    const stackMs = GROUPS.reduce((sum, g) => sum + cpu[g], 0);
    const calls = samples.length;
    let temporalPersistencePerCall: PhaseResult['temporalPersistencePerCall'] = null;
    if (persistence && persistenceBefore) {
      const deltas = Object.entries(persistence)
        .map(([op, { requests, seconds }]) => ({
          op,
          requests: requests - (persistenceBefore[op]?.requests ?? 0),
          seconds: seconds - (persistenceBefore[op]?.seconds ?? 0),
        }))
        .filter((d) => d.requests > 0)
        .sort((a, b) => b.requests - a.requests);
      temporalPersistencePerCall = {
        total: perCall(
          deltas.reduce((sum, d) => sum + d.requests, 0),
          calls,
        ),
        byOperation: Object.fromEntries(deltas.map((d) => [d.op, perCall(d.requests, calls, 2)])),
        meanMsByOperation: Object.fromEntries(deltas.map((d) => [d.op, round((d.seconds * 1000) / d.requests, 2)])),
      };
    }
    // Each completion's overhead and its parts, once; a call the loopback served nothing for has no parts.
    const timed: TimedCall[] = completions
      ? ok.flatMap((call, i) => {
          const parts = overheadParts(call.sentAt, call.answeredAt, engine.served.get(call.tag) ?? []);
          return parts ? [{ call, overheadMs: call.ms - paths[i], parts }] : [];
        })
      : [];
    const timelines = timed.length > 0 ? await timelinesOf(timed) : null;
    return {
      ...spec,
      completed: calls,
      timelines,
      seconds: round(seconds, 2),
      throughputPerS: round(calls / seconds),
      latencyMs: summary(ok.map((s) => s.ms)),
      overheadMs: completions ? summary(ok.map((s, i) => s.ms - paths[i])) : null,
      overheadAfterFirstWaveMs: timed.length > 0 ? afterFirstWave(timed) : null,
      overheadParts: partsOf(timed),
      enginePathMs: completions ? summary(paths) : null,
      engineCallsPerCall: completions
        ? perCall(
            engineCalls.reduce((a, b) => a + b, 0),
            ok.length,
            2,
          )
        : null,
      statuses,
      connectionErrors: result.errors,
      timeouts: result.timeouts,
      wrongPath: ok.filter((s) => s.wrongPath).length,
      pgTransactionsPerCall: perCall(xacts.quorum - xactsBefore.quorum, calls),
      temporalPgTransactionsPerCall:
        xacts.temporal === null || xactsBefore.temporal === null ? null : perCall(xacts.temporal - xactsBefore.temporal, calls),
      temporalPersistencePerCall,
      cpuMsPerCall: Object.fromEntries(Object.entries({ ...cpu, stack: stackMs }).map(([k, v]) => [k, perCall(v, calls, 2)])),
      waits: metricsBefore && metricsAfter ? waitFigures(metricsBefore, metricsAfter, calls) : null,
    };
  };

  // Warm-up: JIT, pools, the workflow cache and Temporal's task queues, unrecorded.
  for (const kind of ['panel', 'express', 'estimate'] as const)
    await runPhase({ target: kind, engineMs: 0, concurrency: 4, calls: scaledCalls(40, 4) });
  const residentOf = (group: Group): number => groups[group].reduce((sum, pid) => sum + treeRss(pid), 0);
  const idle = { apiBytes: residentOf('api'), workerBytes: residentOf('worker') };
  const productPids = [...groups.api, ...groups.worker];
  const probeDir = target.heapProbeDir;
  const idleSplit = probeDir === null ? null : await whileProbing(probeDir, async () => readMemorySplit(productPids, probeDir));
  // After the warm-up's own trailing work (the last workflows' closing tasks, a collection) has settled.
  await new Promise((resolve) => setTimeout(resolve, IDLE_WINDOW_MS / 2));
  const idleBefore = sampleCpu(groups);
  await new Promise((resolve) => setTimeout(resolve, IDLE_WINDOW_MS));
  const idleCpu = cpuDelta(idleBefore, sampleCpu(groups));
  const idleCpuMsPerS: CpuSample = Object.fromEntries(
    Object.entries({ ...idleCpu, stack: GROUPS.reduce((sum, g) => sum + idleCpu[g], 0) }).map(([k, v]) => [
      k,
      round((v * 1000) / IDLE_WINDOW_MS),
    ]),
  );

  const plan: PhaseSpec[] = Object.entries(PHASE_CALLS).flatMap(([phase, calls]) =>
    [1, 16, 64].flatMap((concurrency, i) => {
      const count = calls[i];
      const named = PHASES === undefined || PHASES.includes(phase) || PHASES.includes(`${phase}@${concurrency}`);
      if (count === null || !named) return [];
      const [kind, engineMs] = phase.split(' ');
      return [{ target: kind as CallKind, engineMs: Number(engineMs), concurrency, calls: scaledCalls(count, concurrency) }];
    }),
  );

  const phases: PhaseResult[] = [];
  for (const spec of plan) {
    const r = await runPhase(spec);
    r.cpuMsPerCallNetOfIdle = Object.fromEntries(
      Object.entries(r.cpuMsPerCall).map(([k, v]) => [k, round(v - ((idleCpuMsPerS[k] ?? 0) * r.seconds) / Math.max(1, r.completed), 2)]),
    );
    phases.push(r);
    console.error(
      `  ${name}: ${r.target} ${r.engineMs} ms engine, ${r.concurrency} concurrent: done (${r.completed} calls, ${r.seconds} s)`,
    );
    await beside?.(spec);
  }

  // Workflow tasks and history events per call: what each call costs Temporal.
  const history = async (key: string | undefined): Promise<{ events: number; workflowTasks: number } | null> => {
    if (!key) return null;
    const events = (await target.temporal.workflow.getHandle(workflowIds.deliberation(org.orgId, key)).fetchHistory()).events ?? [];
    return { events: events.length, workflowTasks: events.filter((e) => e.workflowTaskCompletedEventAttributes).length };
  };
  const histories = { panel: await history(lastKeys.panel), express: await history(lastKeys.express) };

  // Memory with IN_FLIGHT deliberations in flight at once on 500 ms engines: peak resident, sampled every 200 ms.
  const measureMemory = async (): Promise<MemoryResult> => {
    let peak = { apiBytes: 0, workerBytes: 0, sumBytes: 0 };
    let peakSplit: MemorySplit | null = null;
    const sampler = setInterval(() => {
      const a = residentOf('api');
      const w = residentOf('worker');
      if (a + w <= peak.sumBytes) return;
      peak = { apiBytes: a, workerBytes: w, sumBytes: a + w };
      peakSplit = probeDir === null ? null : readMemorySplit(productPids, probeDir);
    }, 200);
    const inPhase = (): Promise<PhaseResult> =>
      runPhase({ target: 'panel', engineMs: SLOW_ENGINE_MS, concurrency: IN_FLIGHT, calls: IN_FLIGHT });
    const inFlight = await (probeDir === null ? inPhase() : whileProbing(probeDir, inPhase));
    clearInterval(sampler);
    const mb = (b: number): number => round(b / 2 ** 20, 0);
    return {
      inFlight: IN_FLIGHT,
      idleMb: { api: mb(idle.apiBytes), worker: mb(idle.workerBytes), sum: mb(idle.apiBytes + idle.workerBytes) },
      peakMb: { api: mb(peak.apiBytes), worker: mb(peak.workerBytes), sum: mb(peak.sumBytes) },
      perCallMb: round((peak.sumBytes - idle.apiBytes - idle.workerBytes) / 2 ** 20 / IN_FLIGHT, 2),
      split: idleSplit && peakSplit ? { idle: idleSplit, peak: peakSplit, perCallKb: perCallKb(idleSplit, peakSplit, IN_FLIGHT) } : null,
      phase: inFlight,
    };
  };
  const memory = PHASES === undefined || PHASES.includes('memory') ? await measureMemory() : null;
  const r = (l: readonly number[]): number[] => l.map((v) => round(v, 2));
  return {
    target: name,
    label: STACKS[name].label,
    loadAverage: { start: r(loadAtStart), end: r(os.loadavg()) },
    idleCpuMsPerS,
    phases,
    histories,
    memory,
  };
}

/**
 * The shape each of issue 55's phases is held to (bench/peer-table.ts), run right after it: the express shape one at a
 * time and at 16, the panel shape at 16 with instant and with slow engines. A shape's call that fails ends its phases
 * there (the run goes on, and says so).
 */
function besideShapes(): { beside: (spec: PhaseSpec) => Promise<void>; stop: () => Promise<ShapeFloorResult> } {
  const result: ShapeFloorResult = { command: 'npm run bench:load (each shape right after its Quorum phase, as many calls)', phases: [] };
  const shapeOf = ({ target, engineMs, concurrency, calls }: PhaseSpec): ShapePhaseSpec | undefined => {
    if (target === 'express' && engineMs === 0 && (concurrency === 1 || concurrency === 16))
      return { shape: 'expressShape', calls, concurrency, engineMs };
    if (target === 'panel' && (engineMs === 0 || engineMs === SLOW_ENGINE_MS) && concurrency === 16)
      return { shape: 'panelShape', calls, concurrency, engineMs };
    return undefined;
  };
  // Started at its first phase: the dev target's stack installs the process's Temporal runtime first.
  let stack: ShapeStack | undefined;
  return {
    beside: async (spec) => {
      const shape = shapeOf(spec);
      if (!shape || result.error) return;
      console.error(`  shape: ${shape.shape} ${shape.engineMs} ms engine, ${shape.concurrency} concurrent`);
      try {
        stack ??= await startShapeStack();
        result.phases.push(await stack.phase(shape));
      } catch (err) {
        result.error = err instanceof Error ? err.message : String(err);
      }
    },
    stop: async () => {
      await stack?.stop();
      return result;
    },
  };
}

async function main(): Promise<void> {
  const loadAtStart = os.loadavg();
  const started = new Date();
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: repoRoot, stdio: 'inherit' });
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: repoRoot, encoding: 'utf8' }).trim();
  const engine: EngineState = { engineMs: 0, served: new Map<string, [number, number][]>() };
  const loopback = await startOpenAiLoopback(engineScript(engine));
  const engineEnv = { QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY, QUORUM_OPENAI_BASE_URL: loopback.baseUrl };
  const results: TargetResult[] = [];
  let gateway: GatewayResult | { error: string } | null = null;
  let floor: FloorResult | null = null;
  let shape: ShapeFloorResult | null;
  try {
    // The gateway before any Quorum stack starts, so nothing else competes for the cores.
    if (PEERS) gateway = await measurePeerGateway(engine, loopback.baseUrl);
    // The shapes on their own stack, kept up through the run: each runs right after the dev target's phase it stands
    // beside, so a machine whose speed drifts over the run (10-25% here, and more) moves both alike.
    const shapes = PEERS && TARGETS.includes('dev') ? besideShapes() : undefined;
    try {
      for (const name of TARGETS) {
        const workers = STACKS[name].clusterWorkers;
        console.error(`${STACKS[name].label}: starting`);
        const target = workers === undefined ? await startDevTarget(engineEnv) : await startClusterTarget(workers, engineEnv);
        try {
          results.push(await measure(name, target, engine, loopback, name === 'dev' ? shapes?.beside : undefined));
        } finally {
          await target.stop();
        }
      }
    } finally {
      shape = (await shapes?.stop()) ?? null;
    }
  } finally {
    await loopback.close();
  }
  // The floor last, with everything else stopped: it starts a dev server, an engine and a worker of its own.
  if (PEERS) {
    console.error('Temporal floor: running');
    floor = await runFloor(Math.max(20, Math.round(FLOOR_N * SCALE)), resolveTemporalBinary(toolEnv(loadConfig(), process.env)));
  }

  for (const result of results) printTable(result);
  if (results.length > 1) printSideBySide(results);
  if (shape) printShape(shape);
  // Printed without the peers too: the memory, the estimate and the cluster's rows need none; the shape's say not run.
  const tables = peerTables(results, contextInput(shape, gateway, floor));
  printPeers(gateway, floor, results, tables);
  // A partial or profiled run is for looking, not for the record.
  if (ONLY !== undefined || SCALE !== 1 || CPU_PROF) return console.log('(partial or profiled run: no JSON written)');
  const record = TARGETS.length === 1 && TARGETS[0] === 'dev' ? 'load' : 'load-cluster';
  const file = writeResults(
    record,
    {
      date: started.toISOString(),
      commit,
      command: `${TARGETS.length === 1 && TARGETS[0] === 'dev' ? '' : `BENCH_LOAD_TARGETS=${TARGETS.join(',')} `}npm run bench:load`,
      machine: machine(loadAtStart),
      notes: [
        "overhead = end to end minus the engines' critical path of that call (per sequential stage, the longest call the loopback served)",
        "cpuMsPerCall sums utime+stime over each process tree: api, worker (every worker), temporal (the dev server, or the cluster's Temporal server), temporalPg (the cluster's Postgres for Temporal with its backends; the dev server keeps SQLite in its own process), postgres (Quorum's, with its backends); stack = their sum; bench = autocannon + the loopback engine",
        'the cluster targets run 1 API each, so they differ only in their worker count; on 2 shared cores a second worker cannot give linear gains (the Temporal server, both Postgres and the API share the same cores)',
        'pg transactions from pg_stat_database (each backend reports at most once a second, so a phase edge can shift a few); Temporal persistence requests from the server Prometheus counters persistence_requests and visibility_persistence_requests, summed over services',
        "gateway: LiteLLM's proxy in front of the same loopback engine, run before the Quorum targets start; its cpuMsPerCall is its whole process tree. floor: ../shared/tools/temporal-floor/floor.mjs with FLOOR_PRAGMAS=1, run after everything else stopped; its latency stands for its overhead (its engine answers at once). shape: bench/shape-floor.ts, the floor's workflow and ones in the shape of Quorum's express deliberation (three local activities, two patches, three upserts, a memo; no Quorum code) and of a panel (eleven local activities) on a dev server with npm start's settings kept up through the run, each shape's phase run right after the dev target's phase it is held to (each side's stack idle while the other's phase runs); its panels at 16 with 500 ms engines have their overhead as Quorum's (latency less the engines' critical path). peerTables: issue 55's targets, Quorum / the shape (express one at a time and at 16; the panel at 16 with instant and 500 ms engines), the floor's and LiteLLM's figures beside it, 400 MB and 5 ms absolute, a cluster target's CPU / the dev target's, all from this run",
      ],
      targets: results,
      gateway,
      floor,
      shape,
      peerTables: tables,
    },
    `${record === 'load' ? '' : `${record}-`}latest.json`,
  );
  console.log(`written: ${path.relative(process.cwd(), file)} and bench/results/${record === 'load' ? '' : `${record}-`}latest.json`);
}

const f = (v: number | null | undefined): string => (v === undefined || v === null || Number.isNaN(v) ? '—' : v.toFixed(1));
const statusText = (r: Pick<PhaseResult, 'statuses' | 'connectionErrors' | 'timeouts'> & { wrongPath?: number }): string =>
  `${Object.entries(r.statuses)
    .map(([status, count]) => `${status}×${count}`)
    .join(
      ' ',
    )}${r.connectionErrors ? ` conn errors ${r.connectionErrors}` : ''}${r.timeouts ? ` timeouts ${r.timeouts}` : ''}${r.wrongPath ? ` wrong path ${r.wrongPath}` : ''}`;

function printTable({ label, phases, memory, histories, idleCpuMsPerS: idle, loadAverage }: TargetResult): void {
  console.log(`\n${label}; load average ${loadAverage.start.join(' ')} → ${loadAverage.end.join(' ')}`);
  console.log(
    `idle CPU ms/s: api ${f(idle.api)}, worker ${f(idle.worker)}, temporal ${f(idle.temporal)}, temporal pg ${f(idle.temporalPg)}, pg ${f(idle.postgres)}`,
  );
  console.log(
    'target    engine  conc  calls   req/s   p50 ms   p90 ms   p99 ms  ovh p50  ovh p90  ovh p99  engine/call  pg tx  CPU ms/call (stack: api+worker+temporal+temporal pg+pg)  statuses',
  );
  for (const r of phases) {
    const c = r.cpuMsPerCall;
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
        `  ${f(c.stack)} (${f(c.api)}+${f(c.worker)}+${f(c.temporal)}+${f(c.temporalPg)}+${f(c.postgres)}); bench ${f(c.bench)}`.padEnd(58),
        statusText(r),
      ].join(' '),
    );
  }
  // Where each phase's time went: the worker's counters (dev target only), then the calls' own timelines.
  for (const r of phases) {
    const parts = [
      r.waits ? waitsText(r.waits) : null,
      r.overheadParts ? partsText(r.overheadParts) : null,
      r.timelines
        ? `against the history, ms: slowest ${r.timelines.slowest.calls}: ${timelineText(r.timelines.slowest)}; median ${r.timelines.median.calls}: ${timelineText(r.timelines.median)}`
        : null,
    ].filter((p): p is string => p !== null);
    if (parts.length > 0)
      console.log(
        `waits, ${r.target} ${r.engineMs} ms × ${r.concurrency}: latency p99.9 ${f(r.latencyMs.p999)} ms, overhead p99.9 ${f(r.overheadMs?.p999)} ms; after the first wave (${f(r.overheadAfterFirstWaveMs?.n)} calls) overhead p50 ${f(r.overheadAfterFirstWaveMs?.p50)}, p99 ${f(r.overheadAfterFirstWaveMs?.p99)} ms; ${parts.join('; ')}`,
      );
  }
  for (const r of phases) {
    const ops = Object.entries(r.temporalPersistencePerCall?.byOperation ?? {}).slice(0, 10);
    if (ops.length > 0)
      console.log(
        `Temporal persistence requests per call, ${r.target} ${r.engineMs} ms × ${r.concurrency}: ${r.temporalPersistencePerCall?.total ?? '—'} (${ops.map(([op, n]) => `${op} ${n}`).join(', ')}); UpdateWorkflowExecution mean ${f(r.temporalPersistencePerCall?.meanMsByOperation.UpdateWorkflowExecution)} ms; Temporal pg transactions ${f(r.temporalPgTransactionsPerCall)}`,
      );
  }
  console.log(
    `history per call: panel ${histories.panel?.events ?? '—'} events / ${histories.panel?.workflowTasks ?? '—'} workflow tasks; express ${histories.express?.events ?? '—'} / ${histories.express?.workflowTasks ?? '—'}`,
  );
  if (!memory) return;
  console.log(
    `memory: API + worker resident idle ${memory.idleMb.sum} MB (api ${memory.idleMb.api}, worker ${memory.idleMb.worker}); with ${memory.inFlight} panel deliberations in flight (500 ms engines) peak ${memory.peakMb.sum} MB (api ${memory.peakMb.api}, worker ${memory.peakMb.worker}), ${memory.perCallMb} MB a deliberation in flight; target < 400 MB; ${statusText(memory.phase)} in ${memory.phase.seconds} s, latency p50 ${f(memory.phase.latencyMs.p50)} ms`,
  );
  if (memory.phase.waits) console.log(`  waits: ${waitsText(memory.phase.waits)}`);
  const { split } = memory;
  if (!split) return;
  console.log(`  idle: ${splitText(split.idle)}\n  peak: ${splitText(split.peak)}`);
  console.log(
    `  per deliberation in flight, kB: ${Object.entries(split.perCallKb)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  );
}

/** Each phase's figures, one column per target. */
function printSideBySide(results: readonly TargetResult[]): void {
  const rows: string[][] = [['', ...results.map((r) => r.target)]];
  const add = (label: string, value: (r: TargetResult) => string): number => rows.push([label, ...results.map(value)]);
  add('load average at start', (r) => r.loadAverage.start.join(' '));
  add('idle CPU ms/s (api+worker+temporal+temporal pg+pg)', (r) => {
    const i = r.idleCpuMsPerS;
    return `${f(i.api)}+${f(i.worker)}+${f(i.temporal)}+${f(i.temporalPg)}+${f(i.postgres)}`;
  });
  const phaseKeys = [...new Set(results.flatMap((r) => r.phases.map((p) => `${p.target} ${p.engineMs} ${p.concurrency}`)))];
  for (const key of phaseKeys) {
    const [kind, engineMs, concurrency] = key.split(' ');
    const of = (r: TargetResult): PhaseResult | undefined => r.phases.find((p) => `${p.target} ${p.engineMs} ${p.concurrency}` === key);
    const cell = (value: (p: PhaseResult) => string) => (r: TargetResult) => {
      const p = of(r);
      return p ? value(p) : '—';
    };
    rows.push([`${kind}, ${engineMs} ms engines, ${concurrency} concurrent`]);
    add(
      '  calls/s',
      cell((p) => f(p.throughputPerS)),
    );
    add(
      '  latency p50 / p99 ms',
      cell((p) => `${f(p.latencyMs.p50)} / ${f(p.latencyMs.p99)}`),
    );
    add('  statuses', cell(statusText));
    add(
      '  CPU ms/call (net of idle), stack',
      cell((p) => `${f(p.cpuMsPerCall.stack)} (${f(p.cpuMsPerCallNetOfIdle?.stack)})`),
    );
    const groupLabels: Record<Group, string> = {
      api: 'api',
      worker: 'worker(s)',
      temporal: 'Temporal server',
      temporalPg: "Temporal's Postgres",
      postgres: "Quorum's Postgres",
    };
    for (const g of GROUPS)
      add(
        `    ${groupLabels[g]}`,
        cell((p) => `${f(p.cpuMsPerCall[g])} (${f(p.cpuMsPerCallNetOfIdle?.[g])})`),
      );
    add(
      '  Temporal persistence requests/call (UpdateWorkflowExecution)',
      cell((p) => `${f(p.temporalPersistencePerCall?.total)} (${f(p.temporalPersistencePerCall?.byOperation.UpdateWorkflowExecution)})`),
    );
    add(
      '  pg transactions/call: Temporal / Quorum',
      cell((p) => `${f(p.temporalPgTransactionsPerCall)} / ${f(p.pgTransactionsPerCall)}`),
    );
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => (row[i] ?? '').length)));
  console.log(
    '\nSide by side (one API in each; the cluster targets differ only in their worker count; two shared cores cannot show linear gains from a second worker)',
  );
  for (const row of rows) console.log(row.map((v, i) => (i === 0 ? v.padEnd(widths[i]) : v.padStart(widths[i]))).join('  '));
}

/** LiteLLM's proxy through express 0's one-at-a-time and 16-concurrent phases; on failure, why (the run goes on, and says so). */
async function measurePeerGateway(engine: EngineState, baseUrl: string): Promise<GatewayResult | { error: string }> {
  console.error("LiteLLM's proxy: starting");
  const [one, sixteen] = PHASE_CALLS['express 0'];
  try {
    return await measureGateway({
      engine: { baseUrl, apiKey: OPENAI_TEST_KEY, log: engine },
      model: 'gpt-4.1-mini',
      // The express phases' prompt with its tag, so the loopback's log splits by call as it does for Quorum's.
      content: (tag) => `ref ${tag}: ${EXPRESS_PROMPT}`,
      phases: [
        { concurrency: 1, calls: scaledCalls(one ?? 300, 1) },
        { concurrency: 16, calls: scaledCalls(sixteen ?? 600, 16) },
      ],
      maxS: PHASE_MAX_S,
      idleWindowMs: IDLE_WINDOW_MS,
    });
  } catch (err) {
    console.error(err);
    return { error: err instanceof Error ? err.message : String(err) };
  }
}

/** Floor phases as the peer table reads them: eager start, SQLite WAL; its engine answers at once, so latency is overhead. */
const FLOOR_PHASE = 'local activity, eager start';

/** One target's figures that issue 55's targets read. */
function quorumInput(result: TargetResult): QuorumFigures {
  const quorum = (target: CallKind, engineMs: number, concurrency: number): PhaseFigures | null => {
    const p = result.phases.find((x) => x.target === target && x.engineMs === engineMs && x.concurrency === concurrency);
    return p ? quorumFigures(p) : null;
  };
  const { memory } = result;
  // No engine on an estimate: its latency is its overhead.
  const estimate = result.phases.find((x) => x.target === 'estimate' && x.concurrency === 1);
  return {
    express1: quorum('express', 0, 1),
    express16: quorum('express', 0, 16),
    panelSlow16: quorum('panel', SLOW_ENGINE_MS, 16),
    panelInstant16: quorum('panel', 0, 16),
    estimate1: estimate ? { ...quorumFigures(estimate), overheadP50Ms: estimate.latencyMs.p50 } : null,
    memory: memory ? { peakMb: memory.peakMb.sum, inFlight: memory.inFlight, ok: quorumFigures(memory.phase).ok } : null,
  };
}

/** The run's context beside every target's figures: the shapes (the targets' reference), the gateway and the floor. */
function contextInput(
  shape: ShapeFloorResult | null,
  gateway: GatewayResult | { error: string } | null,
  floor: FloorResult | null,
): Pick<PeerInput, 'shape' | 'gateway' | 'floor'> {
  // A shape's call that failed ends its run (its phases so far are whole), so a phase present is free of errors.
  const shapeAt = (name: ShapePhase['shape'], concurrency: number, engineMs = 0): PhaseFigures | null => {
    const p = shape?.phases.filter((x) => x.shape === name && x.concurrency === concurrency && x.engineMs === engineMs).at(-1);
    return p
      ? { ok: true, overheadP50Ms: p.overheadP50Ms, overheadP99Ms: p.overheadP99Ms, cpuMsPerCall: p.cpuMsPerCall.total, callsPerS: p.perS }
      : null;
  };
  const gatewayAt = (concurrency: number): PhaseFigures | null => {
    const p = gateway && 'phases' in gateway ? gateway.phases.find((x) => x.concurrency === concurrency) : undefined;
    return p
      ? {
          ok: p.ok,
          overheadP50Ms: p.overheadMs.p50,
          overheadP99Ms: p.overheadMs.p99,
          cpuMsPerCall: p.cpuMsPerCall.gateway,
          callsPerS: p.throughputPerS,
        }
      : null;
  };
  const floorAt = (concurrency: number): PhaseFigures | null => {
    const p = floor?.phases.find((x) => x.phase === FLOOR_PHASE && x.concurrency === concurrency);
    return p
      ? { ok: true, overheadP50Ms: p.p50_ms, overheadP99Ms: p.p99_ms, cpuMsPerCall: p.cpu_ms_per_call.total, callsPerS: p.per_s }
      : null;
  };
  return {
    // The express shape one at a time ran twice, alternated with the floor's workflow: its second round, warmer.
    shape: shape && {
      express1: shapeAt('expressShape', 1),
      express16: shapeAt('expressShape', 16),
      panelInstant16: shapeAt('panelShape', 16),
      panelSlow16: shapeAt('panelShape', 16, SLOW_ENGINE_MS),
    },
    gateway: gateway && { one: gatewayAt(1), sixteen: gatewayAt(16) },
    floor: floor && { one: floorAt(1), sixteen: floorAt(16) },
  };
}

/**
 * Each target's table of issue 55's targets. The dev target's compares every cluster target of the run with itself, a
 * cluster target's only itself.
 */
function peerTables(
  results: readonly TargetResult[],
  context: Pick<PeerInput, 'shape' | 'gateway' | 'floor'>,
): { target: StackName; rows: PeerRow[] }[] {
  const dev = results.find((r) => r.target === 'dev');
  const devFigures = dev ? quorumInput(dev) : null;
  const clusters: ClusterFigures[] = results
    .filter((r) => r.target !== 'dev')
    .map((r) => ({ target: r.target, cluster: quorumInput(r), dev: devFigures }));
  return results.map((result) => ({
    target: result.target,
    rows: peerTable({
      quorum: quorumInput(result),
      ...context,
      clusters: result.target === 'dev' ? clusters : clusters.filter((c) => c.target === result.target),
    }),
  }));
}

/** A phase passes nothing unless every call it made answered 200 on the right path. */
function quorumFigures(p: PhaseResult): PhaseFigures {
  const ok =
    p.completed === p.calls &&
    Object.keys(p.statuses).every((status) => status === '200') &&
    p.connectionErrors === 0 &&
    p.timeouts === 0 &&
    p.wrongPath === 0;
  return {
    ok,
    overheadP50Ms: p.overheadMs?.p50 ?? null,
    overheadP99Ms: p.overheadMs?.p99 ?? null,
    cpuMsPerCall: p.cpuMsPerCall.stack,
    callsPerS: p.throughputPerS,
  };
}

/** The gateway's and the floor's own figures, then each target's table of issue 55's targets. */
function printPeers(
  gateway: GatewayResult | { error: string } | null,
  floor: FloorResult | null,
  results: readonly TargetResult[],
  tables: readonly { target: StackName; rows: PeerRow[] }[],
): void {
  if (gateway && 'error' in gateway) console.log(`\nGATEWAY FAILED (no gateway figures): ${gateway.error}`);
  else if (gateway) {
    console.log(
      `\n${gateway.name} (${gateway.command.slice(1).join(' ')}); up in ${gateway.startupS} s; load average ${gateway.loadAverage.start.join(' ')} → ${gateway.loadAverage.end.join(' ')}; idle CPU ${f(gateway.idleCpuMsPerS)} ms/s`,
    );
    for (const p of gateway.processes)
      console.log(`  process ${p.pid} ${p.comm}: ${p.threads} threads, ${p.rssMb} MB resident, ${p.pssMb} MB PSS`);
    console.log('  conc  calls   req/s   p50 ms   p99 ms  ovh p50  ovh p99  CPU ms/call (gateway; bench)  statuses');
    for (const p of gateway.phases)
      console.log(
        [
          String(p.concurrency).padStart(6),
          String(p.completed).padStart(6),
          f(p.throughputPerS).padStart(7),
          f(p.latencyMs.p50).padStart(8),
          f(p.latencyMs.p99).padStart(8),
          f(p.overheadMs.p50).padStart(8),
          f(p.overheadMs.p99).padStart(8),
          `${f(p.cpuMsPerCall.gateway)}; ${f(p.cpuMsPerCall.bench)}`.padStart(29),
          ` ${statusText(p)}${p.ok ? '' : ' — ERRORS'}`,
        ].join(' '),
      );
  }
  if (floor) {
    console.log(
      `\nTemporal floor (${floor.command}; ${floor.seconds} s; load average ${floor.loadAverage.start.join(' ')} → ${floor.loadAverage.end.join(' ')})`,
    );
    if (floor.error) console.log(`  FLOOR ${floor.phases.length === 0 ? 'HAS NO FIGURES' : 'INCOMPLETE'}: ${floor.error}`);
    for (const p of floor.phases)
      console.log(
        `  ${p.phase.padEnd(31)} ${String(p.concurrency).padStart(2)} concurrent, ${String(p.n).padStart(4)} calls (eager ${p.eager}): p50 ${f(p.p50_ms)} ms, p99 ${f(p.p99_ms)} ms, ${f(p.per_s)}/s, CPU ${f(p.cpu_ms_per_call.total)} ms/call (Temporal ${f(p.cpu_ms_per_call.temporal)}, SDK process ${f(p.cpu_ms_per_call.sdk_process)})`,
      );
  }
  const ratio = (v: number | null): string => (v === null ? '—' : `${v.toFixed(2)}x`);
  for (const { target, rows } of tables) {
    const result = results.find((r) => r.target === target);
    console.log(
      `\nIssue 55 targets, ${STACKS[target].label}: Quorum over its workflow's shape with none of its code (bench/shape-floor.ts), beside Temporal's floor (${FLOOR_PHASE}, SQLite WAL) and LiteLLM's proxy, one run; load average at start ${result?.loadAverage.start.join(' ') ?? '—'}`,
    );
    const lines = [
      ['', 'Quorum', 'shape', 'floor', 'LiteLLM', 'dev', 'ratio', 'target', ''],
      ...rows.map((r) => [
        `${r.label} (${r.unit})`,
        f(r.quorum),
        f(r.shape),
        f(r.floor),
        f(r.gateway),
        f(r.dev),
        ratio(r.ratio),
        targetText(r.target, r.unit),
        r.mark,
      ]),
    ];
    const widths = lines[0].map((_, i) => Math.max(...lines.map((l) => l[i].length)));
    for (const l of lines)
      console.log(l.map((v, i) => (i === 0 || i === l.length - 1 ? v.padEnd(widths[i]) : v.padStart(widths[i]))).join('  '));
  }
}

/** The shapes' own phases (bench/shape-floor.ts), and the express shape over the floor's workflow on the same server. */
function printShape(shape: ShapeFloorResult): void {
  console.log(`\nQuorum's workflow shapes with none of its code, each right after the phase of Quorum's it is held to:`);
  for (const line of shapeFloorText(shape)) console.log(line);
}

main().catch(async (err: unknown) => {
  console.error(err);
  process.exit(1);
});
