import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { canonicalHash } from '../domain/canonical-json';
import { conductDeliberation } from '../operations/deliberation';
import { callCeilingMicros } from '../domain/fees';
import type { ModeRecord } from '../domain/modes';
import type { Outcome } from '../domain/outcome';
import { countMessagesTokens, warmTokenizer } from '../domain/tokens';
import { findMode } from '../db/repositories/modes';
import { createOrganisation } from '../db/repositories/organisations';
import { createEngines } from '../engines';
import { loadConfig } from '../infra/config';
import { createLogger } from '../infra/log';
import { bundleInChild } from '../worker/bundle';
import { configuredSlots, createWorkers } from '../worker/workers';
import { stack, startStack, stopStack } from '../test/harness/stack';
import { machine, round, writeResults } from './results';
import { fmt, summary } from './stats';
import { pool } from './pool';
import { settingsOf, testSecretBox } from '../test/harness/settings';

/**
 * DESIGN §13 on the real stack (Temporal dev server + Postgres) with sim engines: throughput with zero-latency
 * engines, orchestration overhead (end to end minus the engines' critical path) with fixed-latency ones, and
 * memory with many calls in flight. Prints figures; asserts nothing.
 *   panel overhead p50 ≤ 50 ms, p99 ≤ 250 ms at 16 concurrent; express p50 ≤ 15 ms; ≥ 30 panels/s sustained;
 *   API + worker < 400 MB resident with 500 deliberations in flight.
 */
const PANEL_CALLS = Number(process.env.BENCH_PANEL_CALLS ?? 400);
const OVERHEAD_CALLS = Number(process.env.BENCH_OVERHEAD_CALLS ?? 160);
const CONCURRENCY = 16;
/** Engine time in the overhead phase: long enough that 16 calls in flight leave the machine mostly idle. */
const ENGINE_MS = 500;
const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 500);

interface Ctx {
  orgId: string;
  keyId: string;
}

// The classifier picks the lane: these prompts land in the panel lane and the express lane respectively.
const PANEL_PROMPT =
  'prove step by step why the sum of two odd numbers is even, and compare two approaches to caching and explain the trade-offs. Why? How?';
const EXPRESS_PROMPT = 'what is the capital of France?';

/** One deliberation; throws when the classifier sent it down another lane, so a figure never measures the wrong path. */
async function call(ctx: Ctx, mode: ModeRecord, content: string, lane: 'panel' | 'express'): Promise<Outcome> {
  const messages = [{ role: 'user' as const, content }];
  const { outcome } = await conductDeliberation(
    { db: stack().db, client: stack().env.client },
    {
      orgId: ctx.orgId,
      apiKeyId: ctx.keyId,
      keyKind: 'live',
      idempotencyKey: randomUUID(),
      fingerprint: canonicalHash(messages),
      form: 'B',
      mode,
      model: mode.ticker,
      tier: 'plus',
      messages,
      promptTokens: countMessagesTokens(messages),
      ceilingMicros: callCeilingMicros('B', mode.config, undefined, undefined),
    },
  );
  if (outcome.lane !== lane) throw new Error(`bench prompt went to the ${outcome.lane} lane, not ${lane}: ${content}`);
  return outcome;
}

/**
 * The engines' own critical path: the slowest seat of each round, then the judge and the synthesis. A seat's span
 * runs from its first attempt's start to its final attempt's end, so a cut-off seat's retry counts as engine time.
 */
function enginePathMs(o: Outcome): number {
  const rounds = new Map<number, number>();
  for (const r of o.seatPasses) rounds.set(r.round, Math.max(rounds.get(r.round) ?? 0, Date.parse(r.endedAt) - Date.parse(r.startedAt)));
  return [...rounds.values()].reduce((a, b) => a + b, 0) + (o.staff.judge?.latencyMs ?? 0) + (o.staff.synthesis?.latencyMs ?? 0);
}

/** Built once, in a child process, as the worker does in production: the bundler stays out of this process. */
const bundlePath = bundleInChild();

async function withWorkers<T>(simLatency: string, work: () => Promise<T>): Promise<T> {
  const { env, db, namespace } = stack();
  const log = createLogger('bench', () => undefined);
  const workers = await createWorkers({
    connection: env.nativeConnection,
    namespace,
    bundlePath,
    ...configuredSlots(loadConfig()),
    deps: { db, engines: createEngines({ ...settingsOf({}), simLatency, logger: log }), log, config: loadConfig(), box: testSecretBox() },
  });
  const running = Promise.all(workers.map((w) => w.run()));
  try {
    return await work();
  } finally {
    for (const w of workers) w.shutdown();
    await running;
  }
}

async function main(): Promise<void> {
  const loadAtStart = os.loadavg();
  const date = new Date().toISOString();
  /** Every figure printed, for bench/results/. */
  const figures: Record<string, unknown> = {};
  warmTokenizer();
  await startStack();
  const db = stack().db;
  const org = await createOrganisation(db, { name: 'Bench', creditMicros: 100_000_000_000n });
  const ctx: Ctx = { orgId: org.orgId, keyId: org.keyId };
  const panel = (await findMode(db, { orgId: org.orgId, form: 'A', model: 'quorum-panel' })) as ModeRecord;
  const express = (await findMode(db, { orgId: org.orgId, form: 'A', model: 'quorum-express' })) as ModeRecord;

  // Throughput: zero-latency engines, so the machine (API, worker, Temporal, Postgres on 2 cores) is the limit.
  await withWorkers('zero', async () => {
    await pool(20, 4, (i) => call(ctx, panel, `Warm-up ${i}: ${PANEL_PROMPT}`, 'panel'));
    const started = performance.now();
    await pool(PANEL_CALLS, CONCURRENCY, (i) => call(ctx, panel, `Question ${i}: ${PANEL_PROMPT}`, 'panel'));
    const seconds = (performance.now() - started) / 1000;
    figures.panelThroughput = { calls: PANEL_CALLS, concurrency: CONCURRENCY, perSecond: round(PANEL_CALLS / seconds) };
    console.log(
      `panel throughput, zero-latency engines, ${PANEL_CALLS} calls at ${CONCURRENCY} concurrent: ${(PANEL_CALLS / seconds).toFixed(1)} deliberations/s (target ≥ 30)`,
    );
  });

  // Overhead: engines that take a fixed time, so 16 calls in flight do not saturate the machine (with zero-latency
  // engines, 16 in flight measure queueing: Little's law), and end to end minus the engines' critical path is ours.
  await withWorkers(`fixed:${ENGINE_MS}`, async () => {
    const overhead = (o: Outcome, ms: number): number => ms - enginePathMs(o);
    const panelOverhead = await pool(OVERHEAD_CALLS, CONCURRENCY, async (i) => {
      const t = performance.now();
      const outcome = await call(ctx, panel, `Overhead ${i}: ${PANEL_PROMPT}`, 'panel');
      return overhead(outcome, performance.now() - t);
    });
    // The pool's first wave starts 16 calls at one instant; later calls arrive staggered, as real traffic does.
    const burst = summary(panelOverhead.slice(0, CONCURRENCY));
    const o = summary(panelOverhead.slice(CONCURRENCY));
    figures.panelOverheadMs = { engineMs: ENGINE_MS, concurrency: CONCURRENCY, ...o, firstBurst: burst };
    console.log(
      `panel orchestration overhead, ${ENGINE_MS} ms engines, ${OVERHEAD_CALLS - CONCURRENCY} calls at ${CONCURRENCY} concurrent: p50 ${fmt(o.p50)}  p90 ${fmt(o.p90)}  p99 ${fmt(o.p99)}  (target p50 ≤ 50 ms, p99 ≤ 250 ms)`,
    );
    console.log(`  the first ${CONCURRENCY}, started at one instant: p50 ${fmt(burst.p50)}  max ${fmt(burst.max)}`);
    const expressOverhead = await pool(50, 1, async (i) => {
      const t = performance.now();
      const outcome = await call(ctx, express, `Express ${i}: ${EXPRESS_PROMPT}`, 'express');
      return overhead(outcome, performance.now() - t);
    });
    const x = summary(expressOverhead);
    figures.expressOverheadMs = { engineMs: ENGINE_MS, concurrency: 1, ...x };
    console.log(`express orchestration overhead, 50 sequential calls: p50 ${fmt(x.p50)}  p99 ${fmt(x.p99)}  (target p50 ≤ 15 ms)`);
  });

  // Memory with many deliberations in flight: engines that take 20 s, so they are all waiting at once.
  await withWorkers('fixed:20000', async () => {
    const before = process.memoryUsage().rss;
    const inFlight = Promise.allSettled(
      Array.from({ length: IN_FLIGHT }, (_, i) => call(ctx, panel, `In flight ${i}: ${PANEL_PROMPT}`, 'panel')),
    );
    let peak = before;
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      peak = Math.max(peak, process.memoryUsage().rss);
      await new Promise((r) => setTimeout(r, 250));
    }
    figures.memory = { inFlight: IN_FLIGHT, peakMb: round(peak / 2 ** 20, 0), beforeMb: round(before / 2 ** 20, 0) };
    console.log(
      `${IN_FLIGHT} deliberations in flight: API client + worker resident ${(peak / 2 ** 20).toFixed(0)} MB (before: ${(before / 2 ** 20).toFixed(0)} MB; target < 400 MB)`,
    );
    // Measured. Waiting for them would take many minutes (20 s engines, 100 activity slots): end them instead.
    const { client } = stack().env;
    const running = client.workflow.list({ query: `QuorumOrg = "${ctx.orgId}" AND ExecutionStatus = "Running"` });
    for await (const wf of running) await client.workflow.getHandle(wf.workflowId).terminate('bench: memory measured');
    await inFlight;
  });

  await stopStack();
  writeResults('deliberation', {
    date,
    command: 'node --import tsx bench/deliberation.ts',
    machine: machine(loadAtStart),
    notes: 'in process: conductDeliberation against the real Temporal dev server and Postgres, sim engines, workers in this process',
    figures,
  });
}

main().catch(async (err: unknown) => {
  console.error(err);
  await stopStack();
  process.exit(1);
});
