import { createServer, type AddressInfo } from 'node:net';
import { temporal } from '@temporalio/proto';
import type { Knex } from 'knex';
import { createApp } from '../api/app';
import { listen } from '../api/listen';
import { createDb } from '../db/knex';
import { createApiKey } from '../db/repositories/api-keys';
import { createOrganisation } from '../db/repositories/organisations';
import { workflowIds } from '../domain/workflow-ids';
import { createLogger } from '../infra/log';
import { createWorkers } from '../worker/workers';
import { stack, startStack, stopStack } from '../test/harness/stack';
import { entrySettingsOf } from '../test/harness/settings';

/**
 * Every SQL statement of one completion through HTTP, by process (API, worker), in order, and per process the
 * statements, the round trips (every query the driver sends, BEGIN and COMMIT included) and the transactions (each
 * explicit one, and each statement outside one: Postgres commits it alone) — the per-call Postgres work (issues 16,
 * 31); then the call's workflow history. A warm-up call first, so pools and caches are as under load.
 * `node --import tsx bench/sql-trace.ts` traces an express and a panel call (BENCH_TRACE_LANE=express or panel: one).
 */
const PROMPTS = {
  express: 'what is the capital of France?',
  panel:
    'prove step by step why the sum of two odd numbers is even, and compare two approaches to caching and explain the trade-offs. Why? How?',
} as const;
type Lane = keyof typeof PROMPTS;
const LANES: Lane[] = process.env.BENCH_TRACE_LANE ? [process.env.BENCH_TRACE_LANE as Lane] : ['express', 'panel'];

interface Traced {
  who: string;
  sql: string;
  /** knex's id of the transaction the statement ran in, if any. */
  tx?: string;
}

interface SqlCount {
  statements: number;
  roundTrips: number;
  transactions: number;
}

const TX_CONTROL = /^(begin|commit|rollback|savepoint|release savepoint)\b/i;

/** Statements, round trips and transactions of one process's trace (see the header). */
function countSql(trace: readonly Traced[]): SqlCount {
  const explicit = new Set(trace.flatMap((t) => (t.tx ? [t.tx] : [])));
  return {
    statements: trace.filter((t) => !TX_CONTROL.test(t.sql)).length,
    roundTrips: trace.length,
    transactions: explicit.size + trace.filter((t) => !t.tx).length,
  };
}

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
  const trace: Traced[] = [];
  const traced = (who: string): Knex => {
    const db = createDb(dbUrl, 10);
    db.on('query', (q: { sql: string; __knexTxId?: string }) =>
      trace.push({ who, sql: q.sql.replace(/\s+/g, ' ').slice(0, 160), tx: q.__knexTxId }),
    );
    return db;
  };
  const apiDb = traced('api');
  const workerDb = traced('worker');
  const workers = await createWorkers({
    connection: env.nativeConnection,
    namespace,
    deps: { db: workerDb, log, ...entrySettingsOf({}, log) },
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
    ...entrySettingsOf({ ...process.env, QUORUM_PUBLIC_URL: url }, log),
  });
  const server = listen(app, port, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));

  const org = await createOrganisation(stack().db, { name: 'Trace', creditMicros: 10n ** 12n });
  const { apiKey } = await createApiKey(stack().db, { orgId: org.orgId, keyKind: 'live' });
  const call = async (lane: Lane, key: string): Promise<void> => {
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify({ model: lane === 'express' ? 'QRM:EXPR' : 'QRM:PANL', messages: [{ role: 'user', content: PROMPTS[lane] }] }),
    });
    if (res.status !== 200) throw new Error(`${key}: ${res.status} ${await res.text()}`);
  };
  const table: Record<string, Record<string, SqlCount>> = {};
  for (const lane of LANES) {
    await call(lane, `trace-${lane}-warm`);
    trace.length = 0;
    const key = `trace-${lane}`;
    await call(lane, key);
    console.log(`\n${lane}:`);
    for (const t of trace) console.log(`${t.who.padEnd(6)} ${t.tx ? 'tx ' : '   '}${t.sql}`);
    table[lane] = Object.fromEntries(['api', 'worker'].map((who) => [who, countSql(trace.filter((t) => t.who === who))]));
    const history = await env.client.workflow.getHandle(workflowIds.deliberation(org.orgId, key)).fetchHistory();
    const events = history.events ?? [];
    const types = events.map((e) => temporal.api.enums.v1.EventType[e.eventType ?? 0].replace(/^EVENT_TYPE_/, ''));
    console.log(
      `history: ${events.length} events, ${types.filter((t) => t === 'WORKFLOW_TASK_COMPLETED').length} workflow tasks: ${types.join(' ')}`,
    );
  }
  console.log('\nlane     process  statements  round trips  transactions');
  for (const [lane, byWho] of Object.entries(table))
    for (const [who, c] of Object.entries(byWho))
      console.log(
        `${lane.padEnd(8)} ${who.padEnd(8)} ${String(c.statements).padStart(10)}  ${String(c.roundTrips).padStart(11)}  ${String(c.transactions).padStart(12)}`,
      );
  console.log(JSON.stringify(table));

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
