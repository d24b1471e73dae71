import { randomUUID } from 'node:crypto';
import os from 'node:os';
import OpenAI from 'openai';
import { readDeliberationEvents, recordDeliberationEvent } from '../db/repositories/deliberation-events';
import { findResponse } from '../db/repositories/responses';
import { workflowIds } from '../domain/workflow-ids';
import { deliberationProgressQuery } from '../workflows/messages';
import { newOrg, PANEL, startApi } from '../test/stack/api/helpers';
import { stack, startStack, stopStack } from '../test/harness/stack';
import { machine, round, writeResults } from './results';
import { summary } from './stats';
import { pool } from './pool';
import { startBenchWorkers } from './workers';

/**
 * Issue 40 item 2: how late a response's stream tells its client of each deliberation step. `CALLS` background
 * responses with `stream: true` through the official `openai` client, `CONCURRENCY` at once, on the demo panel with sim
 * engines of `ENGINE_MS` a step (local activities inside one workflow task). A step's end is its engine call's end
 * (`quorum.ended_at`, seats and judges) or, for a step with no engine call of its own, the moment the worker stored it
 * (`quorum.recorded_at`); its lag is the client's receipt minus that (one machine, one clock). Target: p99 ≤ 500 ms.
 * Beside it, the channel it replaced: the progress query, polled every `QUERY_POLL_MS` on `QUERY_CALLS` calls, lag from
 * a seat's engine end to the first poll that shows it. And the channel's cost per call: the step rows written and the
 * time of one write (insert + NOTIFY), measured here on the same database.
 */
const CALLS = Number(process.env.BENCH_EVENTS_CALLS ?? 64);
const CONCURRENCY = 16;
const ENGINE_MS = Number(process.env.BENCH_EVENTS_ENGINE_MS ?? 1_500);
const QUERY_CALLS = Number(process.env.BENCH_EVENTS_QUERY_CALLS ?? 8);
const QUERY_POLL_MS = 100;
const WRITES = 500;
const PROMPT = 'Compare two approaches to caching and explain the trade-offs, step by step. Why? How?';

type Quorum = { step: string; round?: number; seats_answered?: number; ended_at?: string | null; recorded_at: string };
type StreamEvent = { type: string; sequence_number: number; quorum?: Quorum; response?: { id: string } };

interface CallLags {
  /** Engine end (seats, judges) to receipt. */
  engine: number[];
  /** Stored to receipt, for steps with no engine call of their own (classified, grounded, critique, synthesising). */
  stored: number[];
  /** Engine steps split: the worker's part (engine end to stored) and the API's (stored to receipt). */
  worker: number[];
  api: number[];
  id: string;
  gaps: number;
  /** Steps stored before the stream's first event reached the client: not a notification's lag, left out. */
  before: number;
}

/** One streamed background response, read to its end; each step's lag as the client received it. */
async function streamedCall(openai: OpenAI, i: number): Promise<CallLags> {
  const stream = await openai.responses.create({
    model: PANEL.B,
    input: `${i}: ${PROMPT} ${randomUUID()}`,
    background: true,
    stream: true,
  });
  const lags: CallLags = { engine: [], stored: [], worker: [], api: [], id: '', gaps: 0, before: 0 };
  let expected = 0;
  let connected = Infinity;
  for await (const raw of stream) {
    const at = Date.now();
    const e = raw as unknown as StreamEvent;
    if (e.sequence_number !== expected) lags.gaps += 1;
    expected = e.sequence_number + 1;
    if (e.type === 'response.created' && e.response) {
      lags.id = e.response.id;
      connected = at;
    }
    const q = e.type === 'response.in_progress' ? e.quorum : undefined;
    if (!q) continue;
    const stored = Date.parse(q.recorded_at);
    if (stored < connected) {
      lags.before += 1;
      continue;
    }
    if (q.ended_at) {
      lags.engine.push(at - Date.parse(q.ended_at));
      lags.worker.push(stored - Date.parse(q.ended_at));
      lags.api.push(at - stored);
    } else lags.stored.push(at - stored);
  }
  return lags;
}

/**
 * The progress query's lag on one background call: a first-round seat's engine end to the first poll that counts it.
 * The query's `steps` grows by one when the seats are placed, then by one per seat that answers.
 */
async function queryCall(openai: OpenAI, orgId: string, i: number): Promise<number[]> {
  const idempotencyKey = randomUUID();
  await openai.responses.create(
    { model: PANEL.B, input: `q${i}: ${PROMPT}`, background: true },
    { headers: { 'Idempotency-Key': idempotencyKey } },
  );
  const handle = stack().env.client.workflow.getHandle(workflowIds.deliberation(orgId, idempotencyKey));
  const seen = new Map<string, number>();
  for (;;) {
    const p = await handle.query(deliberationProgressQuery).catch(() => undefined);
    const at = Date.now();
    for (let n = 1; p && n + 1 <= p.steps; n++) if (!seen.has(`1/${n}`)) seen.set(`1/${n}`, at);
    if (p?.stage === 'done' || (await findResponse(stack().db, orgId, idempotencyKey))?.state !== 'running') break;
    await new Promise((resolve) => setTimeout(resolve, QUERY_POLL_MS));
  }
  const row = await findResponse(stack().db, orgId, idempotencyKey);
  const stored = row ? await readDeliberationEvents(stack().db, row.requestId) : [];
  return stored.flatMap(({ event: e }) => {
    if (e.type !== 'seat_answered' || e.round !== 1) return [];
    const at = seen.get(`${e.round}/${e.seatsAnswered}`);
    return at === undefined ? [] : [at - Date.parse(e.endedAt)];
  });
}

/** One step row's write (insert + NOTIFY) on this database, against a request the bench ran; removed after. */
async function writeCost(requestId: string): Promise<{ p50: number; p99: number }> {
  const times: number[] = [];
  for (let i = 0; i < WRITES; i++) {
    const t = performance.now();
    await recordDeliberationEvent(stack().db, { requestId, index: 100_000 + i, event: { type: 'synthesising' } });
    times.push(performance.now() - t);
  }
  await stack().db('deliberation_events').where({ request_id: requestId }).where('step', '>=', 100_000).delete();
  const s = summary(times);
  return { p50: round(s.p50, 2), p99: round(s.p99, 2) };
}

async function main(): Promise<void> {
  const loadAtStart = os.loadavg();
  const date = new Date().toISOString();
  await startStack();
  const engineEnv = { QUORUM_SIM_LATENCY: `fixed:${ENGINE_MS}` };
  const workers = await startBenchWorkers({ env: engineEnv });
  const api = await startApi('B');
  const figures: Record<string, unknown> = {};
  try {
    // One organisation per concurrent caller: the bench measures the stream, not the per-key concurrency limit.
    const orgs = await Promise.all(Array.from({ length: CONCURRENCY }, () => newOrg(1_000)));
    const clients = orgs.map((o) => new OpenAI({ baseURL: `${api.url}/v1`, apiKey: o.ownerKey, maxRetries: 0, timeout: 300_000 }));
    await pool(4, 4, (i) => streamedCall(clients[i], -1 - i));
    console.log(`${CALLS} streamed background responses at ${CONCURRENCY} concurrent; demo panel, sim engines ${ENGINE_MS} ms a step`);
    // Call i on organisation i mod CONCURRENCY: call 0 is the first organisation's (its request times the write below).
    const calls = await pool(CALLS, CONCURRENCY, (i) => streamedCall(clients[i % CONCURRENCY], i));
    const engine = summary(calls.flatMap((c) => c.engine));
    const stored = summary(calls.flatMap((c) => c.stored));
    const all = summary(calls.flatMap((c) => [...c.engine, ...c.stored]));
    const gaps = calls.reduce((n, c) => n + c.gaps, 0);
    const ms = (n: number): string => `${Math.round(n)} ms`;
    console.log(
      `event lag, step end to client: p50 ${ms(all.p50)}  p99 ${ms(all.p99)}  max ${ms(all.max)}  (${all.n} steps; target p99 ≤ 500 ms)`,
    );
    console.log(`  engine steps (seat, judge) from the engine call's end: p50 ${ms(engine.p50)}  p99 ${ms(engine.p99)}  (${engine.n})`);
    console.log(`  other steps from the worker's write:                  p50 ${ms(stored.p50)}  p99 ${ms(stored.p99)}  (${stored.n})`);
    const worker = summary(calls.flatMap((c) => c.worker));
    const apiPart = summary(calls.flatMap((c) => c.api));
    console.log(
      `    of which engine end to stored (worker): p50 ${ms(worker.p50)}  p99 ${ms(worker.p99)}; stored to client (API): p50 ${ms(apiPart.p50)}  p99 ${ms(apiPart.p99)}`,
    );
    console.log(
      `  sequence gaps or repeats seen by clients: ${gaps}; steps stored before their stream opened (left out): ${calls.reduce((n, c) => n + c.before, 0)}`,
    );

    const queryClients = clients.slice(0, QUERY_CALLS);
    const queried = summary((await Promise.all(queryClients.map((c, i) => queryCall(c, orgs[i].orgId, i)))).flat());
    console.log(
      `the progress query instead (polled every ${QUERY_POLL_MS} ms, ${QUERY_CALLS} calls): seat end to poll p50 ${ms(queried.p50)}  p99 ${ms(queried.p99)}  (${queried.n} seats; it waits for the workflow task's heartbeat)`,
    );
    const cost = await writeCost((await readOwnRequest(orgs[0].orgId, calls[0].id)) ?? '');
    const perCall = round(all.n / CALLS, 1);
    console.log(`cost per call: ${perCall} step rows, each one insert + NOTIFY: p50 ${cost.p50} ms  p99 ${cost.p99} ms on this database`);
    figures.lag = { all, engine, stored, worker, api: apiPart, gaps, targetP99Ms: 500 };
    figures.query = { ...queried, pollMs: QUERY_POLL_MS, calls: QUERY_CALLS };
    figures.cost = { rowsPerCall: perCall, writeMs: cost };
  } finally {
    await api.close();
    await workers.stop();
    await stopStack();
  }
  writeResults('events', {
    date,
    command: 'npm run bench:events',
    machine: machine(loadAtStart),
    notes: `in process: API, worker, the Temporal dev server and Postgres on one machine; ${CALLS} streamed background responses, ${CONCURRENCY} concurrent, demo panel (Form B), sim engines ${ENGINE_MS} ms`,
    figures,
  });
}

/** A response's request id, from its id as the stream named it. */
async function readOwnRequest(orgId: string, responseId: string): Promise<string | undefined> {
  const key = Buffer.from(responseId.replace(/^resp_/, ''), 'base64url').toString('utf8');
  return (await findResponse(stack().db, orgId, key))?.requestId;
}

main().catch(async (err: unknown) => {
  console.error(err);
  await stopStack();
  process.exit(1);
});
