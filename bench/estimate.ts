import os from 'node:os';
import { createApiKey } from '../db/repositories/api-keys';
import { upsertMode } from '../db/repositories/modes';
import { createOrganisation } from '../db/repositories/organisations';
import { SYSTEM_MODES } from '../domain/modes';
import { warmTokenizer } from '../domain/tokens';
import { startApi } from '../test/stack/api/helpers';
import { stack, startStack, stopStack } from '../test/harness/stack';
import { machine, writeResults } from './results';
import { fmt, summary } from './stats';

/** `POST /v1/estimate` round trips over loopback HTTP against the real Postgres (budget p50 ≤ 5 ms, DESIGN §13). */
const CALLS = Number(process.env.BENCH_ESTIMATE_CALLS ?? 500);

async function main(): Promise<void> {
  const loadAtStart = os.loadavg();
  const date = new Date().toISOString();
  const figures: Record<string, unknown> = {};
  warmTokenizer();
  await startStack();
  const { db } = stack();
  const api = await startApi('B');
  const url = `${api.url}/v1/estimate`;
  const org = await createOrganisation(db, { name: 'Estimate bench' });
  // A key whose per-minute limit does not stop a benchmark.
  const { apiKey } = await createApiKey(db, { orgId: org.orgId, keyKind: 'live', limits: { requestsPerMinute: 1_000_000 } });
  // The same panel with a classifier model named: its estimate asks that model first (a zero-latency sim engine
  // here), so the figure is our own overhead around a classifier call.
  const classified = await upsertMode(db, {
    ...SYSTEM_MODES[0],
    id: `bench-classified-${org.orgId.slice(4, 12).toLowerCase()}`,
    ticker: 'BENCH:CLSF',
    orgId: org.orgId,
    published: true,
    config: { ...SYSTEM_MODES[0].config, staff: { ...SYSTEM_MODES[0].config.staff, classifier: { engine: 'sim/alpha-experience' } } },
  });
  const content = 'Compare two approaches to caching in a web service and explain the trade-offs, step by step.';
  const once = async (model: string): Promise<{ ms: number; server: number; classify: number }> => {
    const t = performance.now();
    const res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content }] }),
    });
    const json = (await res.json()) as { timing_ms?: { total: number; classify: number } };
    if (res.status !== 200) throw new Error(`estimate answered ${res.status}: ${JSON.stringify(json)}`);
    return { ms: performance.now() - t, server: json.timing_ms?.total ?? NaN, classify: json.timing_ms?.classify ?? NaN };
  };
  for (const [label, model, budget] of [
    ['heuristic classifier', 'QRM:PANL', ' (budget p50 ≤ 5 ms)'],
    ['classifier model (sim, zero latency)', classified.ticker, ''],
  ] as const) {
    for (let i = 0; i < 50; i++) await once(model);
    const samples = [];
    for (let i = 0; i < CALLS; i++) samples.push(await once(model));
    const c = summary(samples.map((x) => x.ms));
    const srv = summary(samples.map((x) => x.server));
    const cls = summary(samples.map((x) => x.classify));
    figures[label] = { calls: CALLS, concurrency: 1, clientMs: c, serverTotalMs: srv, classifyMs: cls };
    console.log(
      `estimate, ${label}, ${CALLS} sequential calls: client round trip p50 ${fmt(c.p50)} p99 ${fmt(c.p99)}; server timing_ms.total p50 ${fmt(srv.p50)} p99 ${fmt(srv.p99)}; classify p50 ${fmt(cls.p50)}${budget}`,
    );
  }
  await api.close();
  await stopStack();
  writeResults('estimate', {
    date,
    command: 'node --import tsx bench/estimate.ts',
    machine: machine(loadAtStart),
    notes: 'POST /v1/estimate over loopback HTTP to the app in this process, sequential calls',
    figures,
  });
}

main().catch(async (err: unknown) => {
  console.error(err);
  await stopStack();
  process.exit(1);
});
