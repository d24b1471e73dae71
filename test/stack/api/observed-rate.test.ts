import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createCompletion } from '../../../operations/completion';
import { audit } from '../../../operations/audit';
import { assignPlan } from '../../../db/repositories/plans';
import { upsertMode } from '../../../db/repositories/modes';
import { saveQuestionSet } from '../../../db/repositories/runs';
import { BUCKETS } from '../../../domain/questions/types';
import { simDemoModes, type ModeRecord } from '../../../domain/modes';
import {
  OPENAI_TEST_KEY,
  openAiReply,
  startOpenAiLoopback,
  type Loopback,
  type RecordedRequest,
  type Reply,
} from '../../fixtures/providers';
import { stack } from '../../harness/stack';
import { uniqueTicker } from '../../harness/unique';
import { customMode, startProductWorkers } from '../deliberation/helpers';
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

/**
 * Issue 52: a mode whose first wave asks two seats and the third only when they disagree is quoted with every seat
 * (`basis.first_wave.basis: "all_seats_assumed"`) until MIN_SAMPLE of its own live, billed API-key calls are recorded
 * on the tier; from then on the third seat is priced at the share of those calls that asked it (`"observed"`). The
 * seats are the real OpenAI adapter against a loopback: a prompt tagged `[[agree]]` gets the same final answer from
 * every seat (the first wave stops early), one tagged `[[split]]` gets two answers (the third seat is asked). The
 * expected share is counted here from the calls' own `svc.aggregation.early_stop`.
 */
describe("observed rates: a first wave's share of calls that asked every seat (issue 52)", function () {
  this.timeout(600_000);
  const TIER = 'plus';
  const AGREE = 12;
  const SPLIT = 8;
  let openai: Loopback;
  let workers: { stop(): Promise<void> };
  let api: Api;
  let org: TestOrg;
  let mode: ModeRecord;
  let liveKey: string;
  let testKey: string;

  const seatText = (req: RecordedRequest): string => {
    const seed = (req.body as { seed?: number }).seed ?? 1;
    const split = req.bodyText.includes('[[split]]');
    return split && seed === 1 ? 'Short waves scatter.\nFinal answer: A' : 'Blue light scatters most.\nFinal answer: B';
  };
  const script = (req: RecordedRequest): Reply => openAiReply({ text: seatText(req), promptTokens: 100, completionTokens: 20 });

  before(async () => {
    openai = await startOpenAiLoopback(script);
    const env = { QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY, QUORUM_OPENAI_BASE_URL: openai.baseUrl };
    workers = await startProductWorkers(env);
    api = await startApi('B', { env });
    org = await newOrg(200);
    // Three OpenAI seats told apart by seed, voting with no judge (first in seat order breaks a tie), two asked first.
    mode = await customMode(org.orgId, 'quorum-panel', {
      tiers: {
        experience: { seats: ['openai/gpt-4.1-mini'] },
        plus: { seats: ['openai/gpt-4.1', 'openai/gpt-4.1-mini', 'openai/gpt-4.1'], tunings: [{ seed: 1 }, { seed: 2 }, { seed: 3 }] },
      },
      staff: { judge: { engine: 'openai/gpt-4.1' }, synthesis: { engine: 'openai/gpt-4.1' } },
      rounds: 1,
      critique: 'never',
      grounding: 'off',
      express: 'never',
      skipSynthesisWhenConverged: false,
      aggregation: { method: 'vote', prose: 'verbatim', tieBreak: 'first', ballot: false, firstWave: 2 },
    });
    liveKey = await newKey(org.orgId, { limits: { requestsPerMinute: 10_000, concurrency: 20 } });
    testKey = await newKey(org.orgId, { keyKind: 'test', limits: { requestsPerMinute: 10_000, concurrency: 20 } });
  });
  after(async () => {
    await api?.close();
    await workers?.stop();
    await openai?.close();
  });

  /** One completion of the mode on the tier; its `svc.aggregation`. */
  async function completion(key: string, scenario: 'agree' | 'split'): Promise<Obj | null> {
    const reply = await call(api, 'POST', '/v1/chat/completions', {
      key,
      body: { model: mode.ticker, tier: TIER, messages: USER(`Why is the sky blue? ${randomUUID().slice(0, 6)} [[${scenario}]]`) },
    });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    return (reply.body.svc as Obj).aggregation as Obj | null;
  }

  /** A live call's round 1: whether it asked every seat, checked against what its scenario makes the seats answer. */
  async function liveCall(scenario: 'agree' | 'split'): Promise<boolean> {
    const a = await completion(liveKey, scenario);
    assert.ok(a, 'the call recorded its aggregation');
    assert.deepEqual([a.early_stop, a.seats_asked], scenario === 'agree' ? [true, 2] : [false, 3], scenario);
    return a.early_stop === false;
  }

  /** The estimate's first wave, and its engines' cost (the mode fee's rate moves at MIN_SAMPLE calls too). */
  async function firstWave(): Promise<{ basis: Obj; gatewayUsd: number }> {
    const estimated = await call(api, 'POST', '/v1/estimate', {
      key: liveKey,
      body: { model: mode.ticker, tier: TIER, messages: USER('Why is the sky blue? Options: A) dust B) scattering') },
    });
    assert.equal(estimated.status, 200, JSON.stringify(estimated.body));
    const estimate = estimated.body.estimate as Obj;
    return { basis: (estimate.basis as Obj).first_wave as Obj, gatewayUsd: Number(estimate.gateway_usd) };
  }

  it('the whole panel is priced until MIN_SAMPLE live calls are recorded, then the share of them that asked every seat', async () => {
    const before = await firstWave();
    assert.deepEqual(before.basis, { seats: 2, of: 3, rest_asked_share: 1, basis: 'all_seats_assumed', n: 0 });

    // Test-key calls (sim engines, billed nothing) never count, however their first wave went.
    for (let i = 0; i < 3; i++) await completion(testKey, 'split');

    // Live calls, the last one held back: two in every five split.
    const scenarios = Array.from({ length: AGREE + SPLIT }, (_, i) =>
      i % 5 === 1 || i % 5 === 3 ? ('split' as const) : ('agree' as const),
    );
    assert.deepEqual([scenarios.filter((x) => x === 'agree').length, scenarios.filter((x) => x === 'split').length], [AGREE, SPLIT]);
    const asked: boolean[] = [];
    for (const scenario of scenarios.slice(0, -1)) asked.push(await liveCall(scenario));
    const few = await firstWave();
    assert.deepEqual(few.basis, { seats: 2, of: 3, rest_asked_share: 1, basis: 'all_seats_assumed', n: MIN_SAMPLE - 1 });
    assert.equal(few.gatewayUsd, before.gatewayUsd, 'below MIN_SAMPLE every seat is still priced');

    asked.push(await liveCall(scenarios[scenarios.length - 1]));
    assert.equal(asked.length, MIN_SAMPLE);
    const share = asked.filter(Boolean).length / asked.length;
    assert.equal(share, SPLIT / MIN_SAMPLE);
    const observed = await firstWave();
    assert.deepEqual(observed.basis, { seats: 2, of: 3, rest_asked_share: share, basis: 'observed', n: MIN_SAMPLE });
    assert.ok(observed.gatewayUsd < before.gatewayUsd, `${observed.gatewayUsd} < ${before.gatewayUsd}: the third seat at ${share}`);

    // The running count holds exactly the live calls, and the auditor's recount of the receipts agrees with it.
    const row = await stack().db('mode_call_stats').where({ mode_id: mode.id, config_hash: mode.configHash, tier: TIER }).first();
    assert.deepEqual([row?.n, row?.wave_calls, row?.wave_all_asked], [MIN_SAMPLE, MIN_SAMPLE, SPLIT]);
    const found = await audit(stack().db, stack().env.client, { orgIds: [org.orgId] });
    assert.deepEqual(
      found.filter((v) => v.invariant === 'mode_stats_mismatch'),
      [],
    );
  });
});
