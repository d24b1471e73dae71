import type { Server } from 'node:http';
import { entrySettingsOf } from '../test/harness/settings';
import type { AddressInfo } from 'node:net';
import { createApp } from '../api/app';
import { DEFAULT_HEDGE_AFTER_MS } from '../operations/run-settings';
import { getRun, questionResults } from '../db/repositories/runs';
import { createOrganisation } from '../db/repositories/organisations';
import { seedDemoModes } from '../db/seed';
import { SPEC_LATENCY_MU } from '../domain/sim-latency';
import { createLogger } from '../infra/log';
import { stack, startStack, stopStack } from '../test/harness/stack';
import { summary } from './stats';
import { startBenchWorkers } from './workers';

/**
 * DESIGN §13: a 150-question certification with engines as slow as the spec's (the `spec` latency model: p50
 * 28.5 s, p90 88 s, p99 229 s per call), sped up by BENCH_SPEEDUP so it fits a bench run, figures scaled back to
 * real latency. Target: under 10 minutes of wall time (the spec's own takes about 150). BENCH_RUN_WINDOW sets the
 * questions in flight (the service's default is 16; a certification's 150 fit at once). Prints; asserts nothing.
 */
const SPEEDUP = Number(process.env.BENCH_SPEEDUP ?? 20);
const WINDOW = Number(process.env.BENCH_RUN_WINDOW ?? 150);
/** Hedge delay at real latency (the service's default); BENCH_HEDGE_MS=0 turns hedging off. */
const HEDGE_AFTER_MS = Number(process.env.BENCH_HEDGE_MS ?? DEFAULT_HEDGE_AFTER_MS);

const minutes = (ms: number): string => `${(ms / 60_000).toFixed(1)} min`;

async function main(): Promise<void> {
  await startStack();
  const { env, db, namespace } = stack();
  const log = createLogger('bench', () => undefined);
  const workers = await startBenchWorkers({ env: {}, simLatency: `spec:${SPEEDUP}` });
  const app = createApp({
    db,
    temporal: env.connection,
    namespace,
    log,
    form: 'A',
    client: env.client,
    runs: { testsPerDay: 20, certificationsPerDay: 3, window: WINDOW, hedgeAfterMs: HEDGE_AFTER_MS / SPEEDUP },
    ...entrySettingsOf(process.env, log),
  });
  const server: Server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  try {
    const org = await createOrganisation(db, { name: 'Bench', creditMicros: 1_000_000_000n });
    await seedDemoModes(db, org.orgId, { idPrefix: 'bench', company: 'BENCH' });
    const started = performance.now();
    const res = await fetch(`${url}/v1/certify`, {
      method: 'POST',
      headers: { authorization: `Bearer ${org.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'bench-strong-sim' }),
    });
    const launched = (await res.json()) as { batch_id: string };
    let run = await getRun(db, launched.batch_id);
    while (!['completed', 'failed', 'cancelled'].includes(run.state)) {
      await new Promise((r) => setTimeout(r, 200));
      run = await getRun(db, launched.batch_id);
    }
    const wallMs = performance.now() - started;
    const results = await questionResults(db, run.id);
    const perQuestion = summary(results.map((r) => r.latencyMs));
    const p50Call = Math.exp(SPEC_LATENCY_MU);
    console.log(
      `certification of a 2-round panel, 150 questions, ${WINDOW} in flight, engines at the spec's latency ÷ ${SPEEDUP}, hedged after ${HEDGE_AFTER_MS / 1000} s:`,
    );
    console.log(
      `  wall time ${(wallMs / 1000).toFixed(1)} s measured = ${minutes(wallMs * SPEEDUP)} at real latency (target < 10 min; the spec's ~150 min)`,
    );
    console.log(`  verdict ${run.summary?.verdict}, lower bound ${run.summary?.overall.winRate?.interval.low.toFixed(3)}`);
    console.log(
      `  one question end to end, real latency: p50 ${minutes(perQuestion.p50 * SPEEDUP)}, p90 ${minutes(perQuestion.p90 * SPEEDUP)}, slowest ${minutes(perQuestion.max * SPEEDUP)}`,
    );
    console.log(
      `  critical path: the slowest question, 6 engine steps one after another (seats, judge, critique, judge, synthesis, run judges), each the slowest of its parallel calls; at p50 ${(p50Call / 1000).toFixed(1)} s a step, ${minutes(6 * p50Call)} at the least`,
    );
    console.log(
      `  orchestration beyond the slowest question: ${(((wallMs - perQuestion.max) * SPEEDUP) / 1000).toFixed(0)} s at real latency`,
    );
  } finally {
    server.close();
    await workers.stop();
    await stopStack();
  }
}

main().catch(async (err: unknown) => {
  console.error(err);
  await stopStack();
  process.exit(1);
});
