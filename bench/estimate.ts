import type { AddressInfo } from 'node:net';
import { createApp } from '../api/app';
import { createApiKey } from '../db/repositories/api-keys';
import { createOrganisation } from '../db/repositories/organisations';
import { warmTokenizer } from '../domain/tokens';
import { createLogger } from '../infra/log';
import { stack, startStack, stopStack } from '../test/harness/stack';
import { fmt, summary } from './stats';

/** `POST /v1/estimate` round trips over loopback HTTP against the real Postgres (budget p50 ≤ 5 ms, DESIGN §13). */
const CALLS = Number(process.env.BENCH_ESTIMATE_CALLS ?? 500);

async function main(): Promise<void> {
  warmTokenizer();
  await startStack();
  const { db, env, namespace } = stack();
  const app = createApp({
    db,
    temporal: env.connection,
    namespace,
    log: createLogger('bench', () => undefined),
    form: 'B',
    client: env.client,
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/estimate`;
  const org = await createOrganisation(db, { name: 'Estimate bench' });
  // A key whose per-minute limit does not stop a benchmark.
  const { apiKey } = await createApiKey(db, { orgId: org.orgId, mode: 'live', limits: { requestsPerMinute: 1_000_000 } });
  const body = JSON.stringify({
    model: 'QRM:PANL',
    messages: [{ role: 'user', content: 'Compare two approaches to caching in a web service and explain the trade-offs, step by step.' }],
  });
  const once = async (): Promise<{ ms: number; server: number }> => {
    const t = performance.now();
    const res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body,
    });
    const json = (await res.json()) as { timing_ms?: { total: number } };
    if (res.status !== 200) throw new Error(`estimate answered ${res.status}: ${JSON.stringify(json)}`);
    return { ms: performance.now() - t, server: json.timing_ms?.total ?? NaN };
  };
  for (let i = 0; i < 50; i++) await once();
  const samples = [];
  for (let i = 0; i < CALLS; i++) samples.push(await once());
  const c = summary(samples.map((s) => s.ms));
  const s = summary(samples.map((x) => x.server));
  console.log(
    `estimate, ${CALLS} sequential calls: client round trip p50 ${fmt(c.p50)} p99 ${fmt(c.p99)}; server timing_ms.total p50 ${fmt(s.p50)} p99 ${fmt(s.p99)} (budget p50 ≤ 5 ms)`,
  );
  server.close();
  await stopStack();
}

main().catch(async (err: unknown) => {
  console.error(err);
  await stopStack();
  process.exit(1);
});
