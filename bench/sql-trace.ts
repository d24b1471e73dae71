import { createServer, type AddressInfo } from 'node:net';
import { temporal } from '@temporalio/proto';
import type { Knex } from 'knex';
import { createApp } from '../api/app';
import { listen } from '../api/listen';
import { createDb } from '../db/knex';
import { createApiKey } from '../db/repositories/api-keys';
import { createOrganisation } from '../db/repositories/organisations';
import { workflowIds } from '../domain/workflow-ids';
import { createEngines } from '../engines';
import { createLogger } from '../infra/log';
import { createWorkers } from '../worker/workers';
import { stack, startStack, stopStack } from '../test/harness/stack';

/**
 * Every SQL statement of one express completion through HTTP, by process (API, worker), in order, with the
 * transactions it commits: what the per-call Postgres round trips are (issue 16); then the call's workflow history. A warm-up call first, so pools and
 * caches are as under load. `node --import tsx bench/sql-trace.ts` (BENCH_TRACE_LANE=panel for a panel).
 */
const PROMPTS = {
  express: 'what is the capital of France?',
  panel:
    'prove step by step why the sum of two odd numbers is even, and compare two approaches to caching and explain the trade-offs. Why? How?',
} as const;
const LANE = (process.env.BENCH_TRACE_LANE ?? 'express') as keyof typeof PROMPTS;

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const { port } = probe.address() as AddressInfo;
  await new Promise((r) => probe.close(r));
  return port;
}

async function main(): Promise<void> {
  await startStack();
  const { env, namespace, dbUrl } = stack();
  const log = createLogger('trace', () => undefined);
  const trace: { who: string; sql: string }[] = [];
  const traced = (who: string): Knex => {
    const db = createDb(dbUrl, 10);
    db.on('query', (q: { sql: string }) => trace.push({ who, sql: q.sql.replace(/\s+/g, ' ').slice(0, 160) }));
    return db;
  };
  const apiDb = traced('api');
  const workerDb = traced('worker');
  const workers = await createWorkers({
    connection: env.nativeConnection,
    namespace,
    deps: { db: workerDb, engines: createEngines({ env: {}, logger: log }), log, env: {} },
  });
  const running = Promise.all(workers.map((w) => w.run()));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const app = createApp({
    db: apiDb,
    temporal: env.connection,
    namespace,
    log,
    form: 'B',
    client: env.client,
    env: { ...process.env, QUORUM_PUBLIC_URL: url },
  });
  const server = listen(app, port, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));

  const org = await createOrganisation(stack().db, { name: 'Trace', creditMicros: 10n ** 12n });
  const { apiKey } = await createApiKey(stack().db, { orgId: org.orgId, mode: 'live' });
  const call = async (n: number): Promise<void> => {
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'idempotency-key': `trace-${n}` },
      body: JSON.stringify({ model: LANE === 'express' ? 'QRM:EXPR' : 'QRM:PANL', messages: [{ role: 'user', content: PROMPTS[LANE] }] }),
    });
    if (res.status !== 200) throw new Error(`call ${n}: ${res.status} ${await res.text()}`);
  };
  await call(0);
  trace.length = 0;
  await call(1);
  const commits: Record<string, number> = {};
  for (const t of trace) {
    console.log(`${t.who.padEnd(6)} ${t.sql}`);
    if (/^(commit|COMMIT)/.test(t.sql)) commits[t.who] = (commits[t.who] ?? 0) + 1;
  }
  const statements: Record<string, number> = {};
  for (const t of trace) statements[t.who] = (statements[t.who] ?? 0) + 1;
  console.log(`statements by process: ${JSON.stringify(statements)}; explicit transactions: ${JSON.stringify(commits)}`);
  const history = await env.client.workflow.getHandle(workflowIds.deliberation(org.orgId, 'trace-1')).fetchHistory();
  const events = history.events ?? [];
  const types = events.map((e) => temporal.api.enums.v1.EventType[e.eventType ?? 0].replace(/^EVENT_TYPE_/, ''));
  console.log(
    `history: ${events.length} events, ${types.filter((t) => t === 'WORKFLOW_TASK_COMPLETED').length} workflow tasks: ${types.join(' ')}`,
  );

  await new Promise((r) => server.close(r));
  for (const w of workers) w.shutdown();
  await running;
  await Promise.all([apiDb.destroy(), workerDb.destroy()]);
  await stopStack();
}

main().catch(async (err: unknown) => {
  console.error(err);
  await stopStack();
  process.exit(1);
});
