import os from 'node:os';
import { createApiKey } from '../db/repositories/api-keys';
import { findMode, upsertMode } from '../db/repositories/modes';
import { createOrganisation } from '../db/repositories/organisations';
import { RECOUNTED_CALL_STATS } from '../db/repositories/mode-call-stats';
import type { Db } from '../db/knex';
import { SYSTEM_MODES } from '../domain/modes';
import { warmTokenizer } from '../domain/tokens';
import { startApi } from '../test/stack/api/helpers';
import { stack, startStack, stopStack } from '../test/harness/stack';
import { machine, writeResults } from './results';
import { fmt, summary } from './stats';

/**
 * `POST /v1/estimate` round trips over loopback HTTP against the real Postgres (budget p50 ≤ 5 ms, DESIGN §13), with
 * the mode's history at 0, 10,000 and 100,000 receipts (issue 42 item 3: flat in history). The receipts are written
 * in bulk as counted calls (live key, plus tier, the mode's current configuration) and the running count made up from
 * them as the migration does; beside each figure, the scan of those receipts each estimate ran before the count.
 */
const CALLS = Number(process.env.BENCH_ESTIMATE_CALLS ?? 500);
const HISTORY = [0, 10_000, 100_000];

/** `more` receipts of counted calls of `mode` (plus tier, key `keyId`), then its running count recounted from them. */
async function addHistory(
  db: Db,
  orgId: string,
  keyId: string,
  mode: { id: string; configHash: string; version: number },
  from: number,
  more: number,
): Promise<void> {
  if (more === 0) return;
  await db.raw(
    `with r as (
       insert into requests (id, org_id, api_key_id, idempotency_key, workflow_id, fingerprint, mode_id, model, state, completed_at)
       select 'req_bench_' || i, ?, ?, 'bench-' || i, 'bench-' || i, 'bench', ?, 'QRM:PANL', 'succeeded', now()
         from generate_series(?::int, ?::int) i
       returning id)
     insert into receipts (request_id, org_id, mode_id, mode_version, config_hash, status, lane, tier, gateway_micros,
                           platform_fee_micros, mode_fee_micros, cap_credit_micros, billed_micros, prompt_tokens,
                           completion_tokens, latency_ms, outcome, created_at, completed_at)
     select id, ?, ?, ?, ?, 'succeeded', 'panel', 'plus', 900, 90, 40, 0, 1030, 1000, 250, 20000, '{"payer":"service"}', now(), now()
       from r`,
    [orgId, keyId, mode.id, from + 1, from + more, orgId, mode.id, mode.version, mode.configHash],
  );
  await db.raw(
    `insert into mode_call_stats (mode_id, config_hash, tier, n, input_tokens, output_tokens, mode_fee_micros)
     select * from (${RECOUNTED_CALL_STATS}) c where c.mode_id = ?
     on conflict (mode_id, config_hash, tier) do update
        set n = excluded.n, input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens, mode_fee_micros = excluded.mode_fee_micros`,
    [mode.id],
  );
  await db.raw('analyze receipts; analyze requests');
}

/** The aggregate each estimate ran over the mode's receipts before the running count (one tier's), timed. */
async function scanMs(db: Db, mode: { id: string; configHash: string }): Promise<number> {
  const t = performance.now();
  await db.raw(`select * from (${RECOUNTED_CALL_STATS}) c where c.mode_id = ? and c.config_hash = ? and c.tier = 'plus'`, [
    mode.id,
    mode.configHash,
  ]);
  return performance.now() - t;
}

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
  const { apiKey, keyId } = await createApiKey(db, { orgId: org.orgId, keyKind: 'live', limits: { requestsPerMinute: 1_000_000 } });
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
  const measure = async (label: string, model: string, budget: string): Promise<Record<string, unknown>> => {
    for (let i = 0; i < 50; i++) await once(model);
    const samples = [];
    for (let i = 0; i < CALLS; i++) samples.push(await once(model));
    const c = summary(samples.map((x) => x.ms));
    const srv = summary(samples.map((x) => x.server));
    const cls = summary(samples.map((x) => x.classify));
    console.log(
      `estimate, ${label}, ${CALLS} sequential calls: client round trip p50 ${fmt(c.p50)} p99 ${fmt(c.p99)}; server timing_ms.total p50 ${fmt(srv.p50)} p99 ${fmt(srv.p99)}; classify p50 ${fmt(cls.p50)}${budget}`,
    );
    return { calls: CALLS, concurrency: 1, clientMs: c, serverTotalMs: srv, classifyMs: cls };
  };
  figures['classifier model (sim, zero latency)'] = await measure('classifier model (sim, zero latency)', classified.ticker, '');
  const panel = await findMode(db, { orgId: org.orgId, form: 'B', model: 'QRM:PANL' });
  if (!panel) throw new Error('the system panel QRM:PANL is not seeded');
  const history: Record<string, unknown>[] = [];
  let receipts = 0;
  for (const level of HISTORY) {
    await addHistory(db, org.orgId, keyId, panel, receipts, level - receipts);
    receipts = level;
    const label = `heuristic classifier, ${level.toLocaleString('en')} receipts of the mode`;
    const figure = await measure(label, 'QRM:PANL', ' (budget p50 ≤ 5 ms, flat in history)');
    const scans = [];
    for (let i = 0; i < 20; i++) scans.push(await scanMs(db, panel));
    const scan = summary(scans);
    console.log(
      `  the scan an estimate ran per tier before the running count, at ${level.toLocaleString('en')} receipts: p50 ${fmt(scan.p50)}`,
    );
    history.push({ receipts: level, ...figure, scanBeforeMs: scan });
  }
  figures['heuristic classifier by history'] = history;
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
