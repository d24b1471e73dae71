import assert from 'node:assert/strict';
import { loadConfig } from '../../../infra/config';
import { randomUUID } from 'node:crypto';
import { createBenchmarkActivities } from '../../../activities/benchmark';
import { getBalance } from '../../../db/repositories/ledger';
import { upsertMode } from '../../../db/repositories/modes';
import { getRun, launchRun, recordQuestionResult } from '../../../db/repositories/runs';
import { simDemoModes, type ModeConfig, type ModeRecord } from '../../../domain/modes';
import type { JudgmentRecord, RunSpec } from '../../../domain/runs';
import { createEngines } from '../../../engines';
import { createLogger } from '../../../infra/log';
import { derivedLaunchKey } from '../../../operations/run-launch';
import { cancelToEnd, exemptFromAudit } from '../../harness/audit';
import { stack } from '../../harness/stack';
import { uniqueTicker } from '../../harness/unique';
import { call, newKey, newOrg, startApi, USER, type Api, type TestOrg } from '../api/helpers';
import { startProductWorkers } from '../deliberation/helpers';
import { judgedRow, runApis } from './helpers';
import { settingsOf, testSecretBox } from '../../harness/settings';

/**
 * Issue 38, run money: the dry run is the price (item 8), 25% off what the call would bill (item 9), no verdict no
 * charge and per-question refunds (item 7), observed rates per configuration (item 10), and a derived launch key
 * across UTC midnight (item 11).
 */

type Obj = Record<string, unknown>;
const micros = (x: unknown): number => Math.round(Number(x) * 1_000_000);
const MIN_SAMPLE = 20; // spec 01: "Until 20 calls are recorded on a tier, its rate is the configured one"
const TIER = 'experience';

/** A sim-engine mode of the test's own (so no other test's calls are on its receipts), from the weak demo design. */
async function ownMode(
  orgId: string,
  change: (c: ModeConfig) => ModeConfig,
  id = `money-${randomUUID().slice(0, 8)}`,
): Promise<ModeRecord> {
  const design = simDemoModes({ idPrefix: 'money', company: 'MONY' })[1].config;
  return upsertMode(stack().db, {
    id,
    ticker: uniqueTicker('MONY'),
    orgId,
    name: 'Run money (test)',
    description: null,
    useWhen: 'Testing run prices.',
    published: true,
    config: change(design),
  });
}

describe('runs: priced to the micro-dollar (issue 38 items 7–11)', function () {
  this.timeout(600_000);
  const apis = runApis();

  const balanceOf = async (orgId: string): Promise<bigint> => (await getBalance(stack().db, orgId)).balanceMicros;

  async function liveCalls(api: Api, key: string, mode: ModeRecord, n: number): Promise<void> {
    for (let i = 0; i < n; i += 5)
      await Promise.all(
        Array.from({ length: Math.min(5, n - i) }, async () => {
          const r = await call(api, 'POST', '/v1/chat/completions', {
            key,
            body: { model: mode.ticker, tier: TIER, messages: USER(`What is ${randomUUID().slice(0, 6)} backwards? One line.`) },
          });
          assert.equal(r.status, 200, JSON.stringify(r.body));
        }),
      );
  }

  async function listedRate(api: Api, key: string, mode: ModeRecord): Promise<Obj> {
    const models = await call(api, 'GET', '/v1/models', { key });
    const svc = (models.body.data as Obj[]).find((m) => m.id === mode.ticker)?.svc as Obj | undefined;
    assert.ok(svc, `${mode.ticker} is listed`);
    return ((svc.pricing as Obj).tiers as Record<string, Obj>)[TIER];
  }

  it('item 8: on a mode with 20 recorded live calls and one more after its dry run, the launch bills exactly the quote and draws its questions, once', async () => {
    const api = apis.B;
    const org = await newOrg(200);
    const key = await newKey(org.orgId, { limits: { requestsPerMinute: 10_000, concurrency: 20 } });
    const mode = await ownMode(org.orgId, (c) => ({ ...c, fees: { ...c.fees, perMtokInputUsd: 3 } }));
    await liveCalls(api, key, mode, MIN_SAMPLE + 2);
    assert.equal((await listedRate(api, key, mode)).n, MIN_SAMPLE + 2, 'the observed rate is published');

    const body = { model: mode.ticker, questions: { easy: 2, medium: 2, hard: 2 }, tiers: [TIER] };
    const dry = await call(api, 'POST', '/v1/tests', { key, body: { ...body, dry_run: true } });
    assert.equal(dry.status, 200, JSON.stringify(dry.body));
    const quoted = micros(dry.body.total_cost_usd);
    const quote = dry.body.svc as { quote_id: string; quote_expires_at: string };
    assert.ok(quoted > 0 && quote.quote_id, JSON.stringify(dry.body));
    assert.ok(Date.parse(quote.quote_expires_at) > Date.now());
    assert.ok(!JSON.stringify(dry.body).includes('seed'), 'the seed stays server-side');

    // One more live call between the quote and the launch moves the observed rate.
    await liveCalls(api, key, mode, 1);
    assert.equal((await listedRate(api, key, mode)).n, MIN_SAMPLE + 3);

    const before = await balanceOf(org.orgId);
    const launched = await call(api, 'POST', '/v1/tests', { key, body, headers: { 'Idempotency-Key': randomUUID() } });
    assert.equal(launched.status, 200, JSON.stringify(launched.body));
    assert.equal(micros(launched.body.billed_usd), quoted, 'billed exactly the dry run');
    assert.equal(before - (await balanceOf(org.orgId)), BigInt(quoted), 'the balance moved by the quote');
    const run = await getRun(stack().db, String(launched.body.batch_id));
    const stored = (await stack().db('advisor_quotes').where({ id: quote.quote_id }).first('seed', 'state')) as {
      seed: string;
      state: string;
    };
    assert.equal(run.spec.seed, Number(stored.seed), "the launch draws the quote's questions");
    assert.equal(stored.state, 'launched', 'the quote is used up');

    // The quote is used: a second launch of the body (another key) is priced afresh, on fresh questions.
    const again = await call(api, 'POST', '/v1/tests', { key, body, headers: { 'Idempotency-Key': randomUUID() } });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.match(String(again.body.note), /Priced afresh/);
    assert.notEqual((await getRun(stack().db, String(again.body.batch_id))).spec.seed, run.spec.seed);
    for (const id of [run.id, String(again.body.batch_id)]) await cancelToEnd(id);
  });

  it('item 9: on a mode whose calls pass its ceiling, a question costs 75% of the ceiling, not 75% of the quote (Form A)', async () => {
    const api = apis.A;
    const org = await newOrg(20);
    // Every call's gross is at least the light surcharge, 2,000 µ$, over its 1,000 µ$ ceiling: Form A bills the ceiling.
    const CEILING = 1_000;
    const mode = await ownMode(org.orgId, (c) => ({
      ...c,
      ceilingMicros: CEILING,
      fees: { ...c.fees, surchargeByDepthMicros: { light: 2_000, medium: 5_000, deep: 10_000 } },
    }));
    const buckets = { light: 2, medium: 1, hard: 1 };
    // By hand: four questions, each ⌊0.75 × 1,000⌋ = 750 µ$: 3,000 µ$.
    const expected = 4 * 750;
    // The spec's questions alone: the equal-cost arms add their own price (test/stack/runs/equal-cost.test.ts).
    const svc = { baselines: false };
    const dry = await call(api, 'POST', '/v1/tests', { key: org.ownerKey, body: { model: mode.id, buckets, svc, dry_run: true } });
    assert.equal(dry.status, 200, JSON.stringify(dry.body));
    assert.equal(micros(dry.body.total_cost_usd), expected);
    const launched = await call(api, 'POST', '/v1/tests', { key: org.ownerKey, body: { model: mode.id, buckets, svc } });
    assert.equal(launched.status, 200, JSON.stringify(launched.body));
    assert.equal(micros(launched.body.billed_usd), expected);
    const run = await getRun(stack().db, String(launched.body.batch_id));
    assert.deepEqual(Object.values(run.spec.questionPrices ?? {}), [750, 750, 750, 750], 'each price is kept on the run');
    await cancelToEnd(run.id);
  });

  it('item 7: a test run refunds exactly its unjudged questions’ own prices (figures by hand)', async () => {
    const { db } = stack();
    const org = await newOrg(5);
    exemptFromAudit(org.orgId, ['run_charge_without_workflow'], 'a run launched and ended by its repository functions, with no workflow');
    const mode = await ownMode(org.orgId, (c) => c);
    const runId = randomUUID();
    // Four questions priced as a run would keep them: a light one, a medium one and two hard ones.
    const prices = { 'light-0001-a': 1_000, 'medium-0001-b': 2_500, 'hard-0001-c': 7_000, 'hard-0002-d': 7_000 };
    const spec: RunSpec = {
      counts: { light: 1, medium: 1, hard: 2 },
      judges: ['judge_a'],
      repeats: 1,
      protocol: 'pairwise',
      punchUp: false,
      tiers: ['plus'],
      questionSetId: null,
      seed: 1,
      questionPrices: prices,
    };
    const billed = 1_000 + 2_500 + 7_000 + 7_000; // 17,500
    const launched = await launchRun(
      db,
      {
        id: runId,
        orgId: org.orgId,
        kind: 'test',
        workflowId: `bench/${org.orgId}/${runId}`,
        idempotencyKey: runId,
        fingerprint: 'refund-test',
        keyKind: 'live',
        apiKeyId: org.keyId,
        modeId: mode.id,
        modeVersion: mode.version,
        model: mode.ticker,
        spec,
        totalQuestions: 4,
        billedMicros: billed,
        estimatedMinutes: 1,
      },
      20,
    );
    assert.ok('created' in launched && launched.created);
    const judged = (verdict: JudgmentRecord['verdict']): { slot: 'judge_a'; repeat: number; verdict: JudgmentRecord['verdict'] }[] => [
      { slot: 'judge_a', repeat: 1, verdict },
    ];
    const row = judgedRow;
    // Judged: the light question and one hard one. The medium one came back with no readable verdict; the other hard
    // one never came back.
    await recordQuestionResult(db, runId, row('light-0001-a', 'light', judged('win')));
    await recordQuestionResult(db, runId, row('hard-0001-c', 'hard', judged('loss')));
    await recordQuestionResult(db, runId, row('medium-0001-b', 'medium', judged(null)));
    const activities = createBenchmarkActivities({
      db,
      engines: createEngines({ ...settingsOf({}) }),
      log: createLogger('test', () => undefined),
      config: loadConfig(),
      box: testSecretBox(),
    });
    await activities.finishRun({ runId, kind: 'test', state: 'cancelled' });
    // By hand: the unjudged medium (2,500) and hard (7,000) questions give back 9,500 µ$ (the unjudged share of the
    // count, 2 of 4, would have been 8,750).
    const ended = await getRun(db, runId);
    assert.equal(ended.refundedMicros, 9_500);
    const refunds = (await db('ledger_entries').where({ org_id: org.orgId, kind: 'run_refund', request_id: runId })) as {
      amount_micros: string;
    }[];
    assert.deepEqual(
      refunds.map((r) => Number(r.amount_micros)),
      [9_500],
    );
  });

  it('item 10: after a release with another fee, the published rate and the estimate reflect the new version only', async () => {
    const api = apis.B;
    const org = await newOrg(100);
    const key = await newKey(org.orgId, { limits: { requestsPerMinute: 10_000, concurrency: 20 } });
    const id = `money-${randomUUID().slice(0, 8)}`;
    const v1 = await ownMode(org.orgId, (c) => ({ ...c, fees: { ...c.fees, perMtokInputUsd: 3 } }), id);
    await liveCalls(api, key, v1, MIN_SAMPLE);
    const observed = await listedRate(api, key, v1);
    assert.equal(observed.n, MIN_SAMPLE, 'v1 publishes its observed rate');
    // The release: the same mode at 5 USD per 1M input tokens.
    const v2 = await upsertMode(stack().db, {
      id,
      ticker: v1.ticker,
      orgId: org.orgId,
      name: 'Run money (test)',
      description: null,
      useWhen: 'Testing run prices.',
      published: true,
      config: { ...v1.config, fees: { ...v1.config.fees, perMtokInputUsd: 5 } },
    });
    assert.equal(v2.version, 2);
    // v2 has no calls of its own: its rate is its configured 5 USD (20 USD out), not a blend with v1's 20 calls.
    assert.deepEqual(await listedRate(api, key, v2), {
      input_usd_per_mtok: null,
      output_usd_per_mtok: null,
      n: 0,
      basis: 'api_calls',
      reason: 'below_min_sample',
    });
    const estimated = await call(api, 'POST', '/v1/estimate', {
      key,
      body: { model: v2.ticker, tier: TIER, messages: USER('Why is the sky blue?') },
    });
    assert.equal(estimated.status, 200, JSON.stringify(estimated.body));
    const estimate = estimated.body.estimate as Obj;
    assert.deepEqual([(estimate.basis as Obj).kind, (estimate.basis as Obj).n], ['engine_rates', 0]);
    const models = await call(api, 'GET', '/v1/models', { key });
    const note = String((((models.body.data as Obj[]).find((m) => m.id === v2.ticker)?.svc as Obj).pricing as Obj).rate_note);
    assert.match(note, /the configured 5 USD per 1M input tokens and 20 per 1M output tokens/);
  });

  it('item 11: a launch without a key across UTC midnight is the run of the same body launched before it, charged once', async () => {
    const api = apis.B;
    const org: TestOrg = await newOrg(20);
    const mode = await ownMode(org.orgId, (c) => c);
    const body = { model: mode.ticker, questions: { easy: 2 } };
    const first = await call(api, 'POST', '/v1/tests', { key: org.ownerKey, body });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const id = String(first.body.batch_id);
    // As if it had been launched an hour ago, yesterday (UTC): its derived key is yesterday's.
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    const { fingerprint } = await getRun(stack().db, id);
    const auth = { orgId: org.orgId, keyId: org.keyId } as Parameters<typeof derivedLaunchKey>[0];
    const yesterdaysKey = derivedLaunchKey(auth, 'test', fingerprint, mode.version, yesterday);
    await stack()
      .db('runs')
      .where({ id })
      .update({ idempotency_key: yesterdaysKey, created_at: stack().db.raw("now() - interval '1 hour'") });

    const again = await call(api, 'POST', '/v1/tests', { key: org.ownerKey, body });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(again.body.batch_id, id, 'the same run, not a second one today');
    assert.equal((await stack().db('runs').where({ org_id: org.orgId })).length, 1);
    assert.equal((await stack().db('ledger_entries').where({ org_id: org.orgId, kind: 'test_run_charge' })).length, 1, 'charged once');
    await cancelToEnd(id);
  });
});

describe('runs: a launch whose admission is not confirmed says it may still be charged, and names its batch (issue 38 item 11)', function () {
  this.timeout(180_000);
  let api: Api;
  let workers: { stop(): Promise<void> } | undefined;

  before(async () => {
    // No workers yet: the run's workflow starts, but nothing admits it within the launch's wait.
    api = await startApi('B', { runs: { testsPerDay: 20, certificationsPerDay: 3, window: 4 } });
  });
  after(async () => {
    await api.close();
    await workers?.stop();
  });

  it('the 503 says the run may still start and be charged, with its batch id; once admitted, the same request shows that batch', async () => {
    const org = await newOrg(20);
    const mode = await ownMode(org.orgId, (c) => c);
    const body = { model: mode.ticker, questions: { easy: 2 } };
    const headers = { 'Idempotency-Key': randomUUID() };
    const unconfirmed = await call(api, 'POST', '/v1/tests', { key: org.ownerKey, body, headers });
    assert.equal(unconfirmed.status, 503, JSON.stringify(unconfirmed.body));
    assert.equal(unconfirmed.body.error?.code, 'service_unavailable');
    const batchId = (unconfirmed.body.svc as { batch_id?: string } | undefined)?.batch_id;
    assert.ok(batchId, JSON.stringify(unconfirmed.body));
    assert.match(String(unconfirmed.body.error?.message), /may still start/);
    assert.doesNotMatch(String(unconfirmed.body.error?.message), /nothing was charged/i);
    assert.ok(String(unconfirmed.body.error?.message).includes(batchId));

    // The workers come up: the workflow admits the run and charges it, under the batch id the 503 named.
    workers = await startProductWorkers();
    for (const until = Date.now() + 60_000; !(await stack().db('runs').where({ id: batchId }).first('id')) && Date.now() < until;)
      await new Promise((r) => setTimeout(r, 200));
    const charges = await stack().db('ledger_entries').where({ org_id: org.orgId, kind: 'test_run_charge', request_id: batchId });
    assert.equal(charges.length, 1, 'admitted and charged later, as the 503 warned');
    const again = await call(api, 'POST', '/v1/tests', { key: org.ownerKey, body, headers });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(again.body.batch_id, batchId);
    await cancelToEnd(batchId);
  });
});
