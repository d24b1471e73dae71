import assert from 'node:assert/strict';
import { entrySettingsOf } from '../../harness/settings';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createApp } from '../../../api/app';
import { listen } from '../../../api/listen';
import { freePort } from '../../../infra/free-port';
import { createLogger } from '../../../infra/log';
import { parseExposition, samplesOf, total, type Exposition } from '../../harness/prometheus';
import { stack } from '../../harness/stack';
import { stackProcessEnv, startWorkerProcess } from '../../harness/worker';
import { call, newOrg, PANEL, startApi, USER, type Api } from './helpers';

async function scrape(url: string, headers: Record<string, string> = {}): Promise<Exposition> {
  const res = await fetch(url, { headers });
  assert.equal(res.status, 200, `${url}: ${res.status}`);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return parseExposition(await res.text());
}

/** The ledger summed by kind straight from Postgres, in USD as the gauges state it. */
async function ledgerFromDb(): Promise<{ byKind: Map<string, number>; reserved: number }> {
  const rows = (await stack()
    .db('ledger_entries')
    .groupBy('kind')
    .select('kind')
    .select(stack().db.raw('sum(amount_micros)::text as amount, sum(reserved_delta_micros)::text as reserved'))) as {
    kind: string;
    amount: string;
    reserved: string;
  }[];
  return {
    byKind: new Map(rows.map((r) => [r.kind, Number(BigInt(r.amount)) / 1e6])),
    reserved: Number(rows.reduce((n, r) => n + BigInt(r.reserved), 0n)) / 1e6,
  };
}

describe('/metrics in Prometheus format (issue 16)', function () {
  this.timeout(120_000);
  let api: Api;
  let worker: ChildProcess;
  let workerMetrics: string;
  let dataDir: string;
  let requestId: string;
  let lane: string;

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-metrics-'));
    // The worker entry point as `npm start` runs it: the Temporal SDK's exporter is installed with the process's runtime.
    const port = await freePort();
    worker = await startWorkerProcess(stackProcessEnv(dataDir, { QUORUM_WORKER_METRICS_PORT: String(port) }));
    workerMetrics = `http://127.0.0.1:${port}/metrics`;
    api = await startApi('B');

    const org = await newOrg();
    const reply = await call(api, 'POST', '/v1/chat/completions', {
      key: org.ownerKey,
      body: { model: PANEL.B, messages: USER('Compare merge sort with quicksort step by step, and say when each wins.') },
    });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    requestId = String(reply.body.svc?.request_id);
    const receipt = await call(api, 'GET', `/v1/receipts/${requestId}`, { key: org.ownerKey });
    assert.equal(receipt.status, 200, JSON.stringify(receipt.body));
    lane = String((await stack().db('receipts').where({ request_id: requestId }).first('lane')).lane);
    assert.equal(await call(api, 'GET', '/v1/no-such-endpoint').then((r) => r.status), 404);
  });
  after(async () => {
    await api?.close();
    if (worker && worker.exitCode === null && worker.signalCode === null) {
      worker.kill('SIGTERM');
      await new Promise((r) => worker.once('exit', r));
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('the API: request latency by route pattern and status, deliberations by lane and outcome, ledger totals as in Postgres', async () => {
    const m = await scrape(`${api.url}/metrics`);
    assert.equal(m.types.get('quorum_http_request_duration_seconds'), 'histogram');
    const completions = { method: 'POST', route: '/v1/chat/completions', status: '200' };
    assert.ok(total(m, 'quorum_http_request_duration_seconds_count', completions) >= 1, 'the completion was timed');
    assert.ok(total(m, 'quorum_http_request_duration_seconds_count', { route: '/v1/receipts/:request_id', status: '200' }) >= 1);
    assert.ok(total(m, 'quorum_http_request_duration_seconds_count', { route: 'unmatched', status: '404' }) >= 1);
    const values = m.samples.flatMap((s) => Object.values(s.labels));
    assert.ok(!values.some((v) => v.includes(requestId) || v.includes('no-such-endpoint')), 'no raw path or id is a label value');

    assert.equal(m.types.get('quorum_deliberations_total'), 'counter');
    assert.ok(total(m, 'quorum_deliberations_total', { lane, outcome: 'succeeded' }) >= 1, `a ${lane} deliberation succeeded`);
    assert.ok(total(m, 'quorum_deliberation_duration_seconds_count', { lane, outcome: 'succeeded' }) >= 1);
    const overhead = samplesOf(m, 'quorum_deliberation_overhead_seconds_count', { lane });
    assert.ok(overhead.length === 1 && overhead[0].value >= 1, 'overhead observed for the lane');
    assert.ok(total(m, 'process_resident_memory_bytes') > 0, "Node's own process metrics");

    // Read right after the scrape; nothing else in this file moves money in between.
    const db = await ledgerFromDb();
    const gauges = samplesOf(m, 'quorum_ledger_amount_usd');
    assert.deepEqual(new Map(gauges.map((g) => [g.labels.kind, g.value])), db.byKind);
    assert.ok((db.byKind.get('charge') ?? 0) < 0, 'the completion was charged');
    assert.equal(total(m, 'quorum_ledger_reserved_usd'), db.reserved);
    assert.ok(total(m, 'quorum_ledger_entries', { kind: 'charge' }) >= 1);
  });

  it('the worker: stage durations by lane, engine calls by family and outcome, and the Temporal SDK metrics in one scrape', async () => {
    const m = await scrape(workerMetrics);
    for (const stage of ['prepare', 'settle'])
      assert.ok(total(m, 'quorum_deliberation_stage_duration_seconds_count', { stage }) >= 1, `${stage} timed`);
    assert.ok(total(m, 'quorum_deliberation_stage_duration_seconds_count', { stage: 'prepare', lane }) >= 1, 'prepare knows the lane');
    assert.ok(total(m, 'quorum_deliberation_stage_duration_seconds_count', { stage: 'seats', lane, round: '1' }) >= 1, 'round 1 seats');
    if (lane === 'panel') assert.ok(total(m, 'quorum_deliberation_stage_duration_seconds_count', { stage: 'judge', lane }) >= 1);
    assert.ok(total(m, 'quorum_engine_call_duration_seconds_count', { family: 'sim', outcome: 'ok' }) >= 1, 'sim engine calls');

    // Inside the worker between the steps (issue 42 item 2): every step here is a local activity, each dispatched once;
    // a deliberation's turnarounds are observed once, at its settle (or its failure's record), and are a part of its
    // duration at the API. Counted against the ends this worker ran: it polls the shard's shared queue, so a
    // deliberation an earlier test file left running may end here too (its duration, in any lane, is in this process's
    // API metrics as well).
    assert.equal(
      total(m, 'quorum_local_activity_dispatch_seconds_count'),
      total(m, 'quorum_deliberation_stage_duration_seconds_count'),
      'each step dispatched',
    );
    const settled = total(m, 'quorum_deliberation_stage_duration_seconds_count', { stage: 'settle' });
    const failed = total(m, 'quorum_deliberation_stage_duration_seconds_count', { stage: 'fail' });
    assert.ok(settled >= 1, "this test's deliberation settled here");
    assert.equal(total(m, 'quorum_deliberation_turnaround_seconds_count'), settled + failed, 'one observation a deliberation ended');
    const turnaround = total(m, 'quorum_deliberation_turnaround_seconds_sum');
    const duration = total(await scrape(`${api.url}/metrics`), 'quorum_deliberation_duration_seconds_sum');
    assert.ok(turnaround > 0 && turnaround < duration, `turnarounds ${turnaround} s within the calls' ${duration} s`);

    const temporal = [...m.types.keys()].filter((name) => name.startsWith('temporal_'));
    assert.ok(temporal.length > 0, 'the Temporal SDK exporter is merged in');
    assert.ok(
      // A deliberation's engine calls are local activities (issue 31), timed by the SDK under their own family.
      m.samples.some((s) => s.name.startsWith('temporal_local_activity_execution_latency_seconds')),
      `local activity latency from the SDK; families: ${temporal.join(' ')}`,
    );
  });

  it('QUORUM_METRICS_TOKEN: a scraper without the bearer token is refused', async () => {
    const app = createApp({
      db: stack().db,
      temporal: stack().env.connection,
      namespace: stack().namespace,
      log: createLogger('test-api', () => undefined),
      client: stack().env.client,
      ...entrySettingsOf({ QUORUM_METRICS_TOKEN: 'scrape-secret' }),
    });
    const server = listen(app, 0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const address = server.address();
    const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/metrics`;
    try {
      assert.equal((await fetch(url)).status, 401);
      assert.equal((await fetch(url, { headers: { authorization: 'Bearer wrong-secret' } })).status, 401);
      const m = await scrape(url, { authorization: 'Bearer scrape-secret' });
      assert.ok(m.types.has('quorum_http_request_duration_seconds'));
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
