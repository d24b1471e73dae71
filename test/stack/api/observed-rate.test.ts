import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createCompletion } from '../../../operations/completion';
import { assignPlan } from '../../../db/repositories/plans';
import { upsertMode } from '../../../db/repositories/modes';
import { saveQuestionSet } from '../../../db/repositories/runs';
import { BUCKETS } from '../../../domain/questions/types';
import { simDemoModes, type ModeRecord } from '../../../domain/modes';
import { stack } from '../../harness/stack';
import { uniqueTicker } from '../../harness/unique';
import { startProductWorkers } from '../deliberation/helpers';
import { appAuth, newPerson, operationDeps, testPlan } from '../plans/helpers';
import { call, newKey, newOrg, startApi, USER, type Api, type TestOrg } from './helpers';

/**
 * A mode's published Form B rate (issue 26 item 3; spec 01 `basis: api_calls`; DESIGN §7 "only live, billed API-key
 * calls move a mode's observed rates"). Calls that bill no mode fee (a test key's, a connected app's on a plan) are
 * not evidence of the rate: however many there are, `/v1/models` and `/v1/estimate` keep the mode's designed rate.
 * Live calls on an API key still replace it once MIN_SAMPLE (20) of them are recorded on the tier.
 */

type Obj = Record<string, unknown>;
const MIN_SAMPLE = 20; // spec 01: "Until 20 calls are recorded on a tier, its rate is the configured one"
const TIER = 'experience';
const micros = (x: unknown): number => Math.round(Number(x) * 1_000_000);

describe('observed rates: only live, billed API-key calls move a mode published rate (Form B)', function () {
  this.timeout(600_000);
  let api: Api;
  let workers: { stop(): Promise<void> };
  let org: TestOrg;
  let mode: ModeRecord;
  let liveKey: string;
  let testKey: string;
  /** The organisation's own three questions: every dry run prices the same prompts. */
  const setId = `qs_${randomUUID().slice(0, 8)}`;

  before(async () => {
    workers = await startProductWorkers();
    api = await startApi('B');
    org = await newOrg(200);
    // A mode of the test's own, so no other test's calls are on its receipts, on simulated engines (so a live key's
    // test run can be priced here), with a designed rate of 3 USD per 1M input tokens.
    const design = simDemoModes({ idPrefix: 'rate', company: 'RATE' })[1].config;
    mode = await upsertMode(stack().db, {
      id: `rate-${randomUUID().slice(0, 8)}`,
      ticker: uniqueTicker('RATE'),
      orgId: org.orgId,
      name: 'Observed rate (test)',
      description: null,
      useWhen: 'Testing which calls publish a rate.',
      published: true,
      config: { ...design, fees: { ...design.fees, perMtokInputUsd: 3 } },
    });
    liveKey = await newKey(org.orgId, { limits: { requestsPerMinute: 10_000, concurrency: 20 } });
    testKey = await newKey(org.orgId, { keyKind: 'test', limits: { requestsPerMinute: 10_000, concurrency: 20 } });
    await saveQuestionSet(stack().db, {
      id: setId,
      orgId: org.orgId,
      name: 'three',
      questions: BUCKETS.map((bucket) => ({
        id: `q-${bucket}`,
        question: `A ${bucket} question: what is 6 times 7? End with "Final answer: <answer>".`,
        answer: '42',
        bucket,
        cluster: 'rate.test',
      })),
    });
  });
  after(async () => {
    await api.close();
    await workers.stop();
  });

  const PROMPT = USER('Explain in two sentences why ice floats on water.');

  /** `n` completions, five at a time. */
  async function many(n: number, one: () => Promise<void>): Promise<void> {
    for (let i = 0; i < n; i += 5) await Promise.all(Array.from({ length: Math.min(5, n - i) }, () => one()));
  }

  async function completion(key: string): Promise<Obj> {
    const reply = await call(api, 'POST', '/v1/chat/completions', {
      key,
      body: { model: mode.ticker, tier: TIER, messages: USER(`What is ${randomUUID().slice(0, 6)} backwards? One line.`) },
    });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    return reply.body;
  }

  async function tierRate(): Promise<{ listed: Obj; note: string; estimate: Obj; testRunUsd: number }> {
    const models = await call(api, 'GET', '/v1/models', { key: liveKey });
    assert.equal(models.status, 200);
    const svc = (models.body.data as Obj[]).find((m) => m.id === mode.ticker)?.svc as Obj | undefined;
    assert.ok(svc, `${mode.ticker} is listed`);
    const pricing = svc.pricing as Obj;
    const estimated = await call(api, 'POST', '/v1/estimate', { key: liveKey, body: { model: mode.ticker, tier: TIER, messages: PROMPT } });
    assert.equal(estimated.status, 200, JSON.stringify(estimated.body));
    const dryRun = await call(api, 'POST', '/v1/tests', {
      key: liveKey,
      body: { model: mode.ticker, questions: { easy: 1, medium: 1, hard: 1 }, tiers: [TIER], dry_run: true, svc: { question_set: setId } },
    });
    assert.equal(dryRun.status, 200, JSON.stringify(dryRun.body));
    return {
      testRunUsd: Number(dryRun.body.total_cost_usd),
      listed: (pricing.tiers as Record<string, Obj>)[TIER],
      note: String(pricing.rate_note),
      estimate: estimated.body.estimate as Obj,
    };
  }

  const DESIGNED = { input_usd_per_mtok: null, output_usd_per_mtok: null, n: 0, basis: 'api_calls', reason: 'below_min_sample' };

  it('test-key and plan calls leave the designed rate in /v1/models, /v1/estimate and test-run prices; 20 live calls replace it', async () => {
    const before = await tierRate();
    assert.deepEqual(before.listed, DESIGNED);
    assert.match(before.note, /the configured 3 USD per 1M input tokens and 12 per 1M output tokens/);
    const designedFee = micros(before.estimate.mode_fee_usd);
    assert.ok(designedFee > 0, 'the designed rate prices the quote');
    assert.ok(before.testRunUsd > 0);
    assert.deepEqual([(before.estimate.basis as Obj).kind, (before.estimate.basis as Obj).n], ['engine_rates', 0]);

    // More than MIN_SAMPLE test-key calls: recorded, billed nothing, mode fee 0.
    await many(MIN_SAMPLE + 2, async () => {
      const body = await completion(testKey);
      assert.equal((body.svc as Obj).billed_usd, 0);
    });
    // More than MIN_SAMPLE calls of a connected app on a plan, in this organisation: real cost only, no mode fee.
    const person = await newPerson();
    await stack().db('memberships').insert({ person_id: person.id, org_id: org.orgId, role: 'member' });
    await assignPlan(stack().db, { personId: person.id, planId: (await testPlan({ monthlyAllowanceMicros: 100_000_000 })).id });
    const app = await appAuth(org.orgId, person.id);
    await many(MIN_SAMPLE + 2, async () => {
      const { outcome } = await createCompletion(operationDeps('B'), app, {
        body: { model: mode.ticker, tier: TIER, messages: USER(`Name ${randomUUID().slice(0, 6)} in one line.`) },
      });
      assert.deepEqual([outcome.payer, outcome.money.modeFeeMicros], ['plan', 0]);
    });
    const receipts = Number((await stack().db('receipts').where({ mode_id: mode.id, tier: TIER }).count({ n: '*' }))[0].n);
    assert.equal(receipts, 2 * (MIN_SAMPLE + 2), 'every one of those calls has its receipt');

    const afterFree = await tierRate();
    assert.deepEqual(afterFree.listed, DESIGNED, 'calls that bill no mode fee never publish a rate');
    assert.match(afterFree.note, /the configured 3 USD per 1M input tokens/);
    assert.equal(micros(afterFree.estimate.mode_fee_usd), designedFee, 'the quote still prices the mode fee at the designed rate');
    assert.deepEqual([(afterFree.estimate.basis as Obj).kind, (afterFree.estimate.basis as Obj).n], ['engine_rates', 0]);
    assert.equal(afterFree.testRunUsd, before.testRunUsd, 'a test run is priced at the designed rate too');

    // Live, billed API-key calls: at MIN_SAMPLE their recorded mode fee per weighted token is the published rate.
    let fee = 0;
    let weighted = 0;
    await many(MIN_SAMPLE, async () => {
      const body = await completion(liveKey);
      const receipt = await call(api, 'GET', `/v1/receipts/${String((body.svc as Obj).request_id)}`, { key: liveKey });
      const r = receipt.body.receipt as Obj;
      fee += micros((r.charges as Obj).mode_fee_usd);
      weighted += Number(r.prompt_tokens) + 4 * Number(r.completion_tokens);
    });
    assert.ok(fee > 0 && weighted > 0);
    const afterLive = await tierRate();
    const perMtok = (usd: number): number => Math.round(usd * 1_000_000) / 1_000_000;
    assert.deepEqual(afterLive.listed, {
      input_usd_per_mtok: perMtok(fee / weighted),
      output_usd_per_mtok: perMtok((4 * fee) / weighted),
      n: MIN_SAMPLE,
      basis: 'api_calls',
    });
    assert.deepEqual([(afterLive.estimate.basis as Obj).kind, (afterLive.estimate.basis as Obj).n], ['api_calls', MIN_SAMPLE]);
  });
});
