import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { upsertMode } from '../../../db/repositories/modes';
import { assignPlan, planUsage } from '../../../db/repositories/plans';
import { postEntries } from '../../../db/repositories/ledger';
import { saveQuestionSet } from '../../../db/repositories/runs';
import { audit } from '../../../operations/audit';
import { simDemoModes, type ModeRecord } from '../../../domain/modes';
import type { Plan } from '../../../domain/plans';
import { BUCKETS, type Question } from '../../../domain/questions/types';
import { countMessagesTokens } from '../../../domain/tokens';
import { CATALOG } from '../../../engines/catalog';
import { stack } from '../../harness/stack';
import { uniqueTicker } from '../../harness/unique';
import { call, moneySnapshot, newKey, newOrg, startApi, type Api, type Reply } from '../api/helpers';
import { startProductWorkers } from '../deliberation/helpers';
import { connect, json, refusal } from '../mcp/helpers';
import { connectFromNothing, DesktopApp, newPerson, RedirectReceiver, signIn } from '../oauth/helpers';
import { demoModes, untilEnded } from '../runs/helpers';
import { testPlan } from './helpers';

/**
 * Issue 38 item 12, spec 02: "a connected app that signs in pays real cost with no mode fee", and "a run billed to a
 * plan launches only on a mode the caller owns". A person signs in to real connected apps (the official SDK's OAuth
 * provider, consent in a headless Chromium): one with a `/v1` token, one on `/mcp`. Their test runs are priced and
 * billed to their plan at real engine cost, 25% off per question (worked out here from the engine's catalog price),
 * within the plan's tiers and allowance, never touching the organisation's balance; a refund gives the allowance
 * back; an advisor's quote is approved only where it bills.
 */

const question = (bucket: Question['bucket'], i: number): Question => ({
  id: `plan-${bucket}-${i}`,
  question: `A ${bucket} question, number ${i}: what is ${i + 6} times 7? End with "Final answer: <answer>".`,
  answer: String((i + 6) * 7),
  bucket,
  cluster: `plan.${bucket}`,
});
/** Ten of each bucket: a run asking for ten of each runs exactly these, whatever its seed. */
const QUESTIONS = BUCKETS.flatMap((bucket) => Array.from({ length: 10 }, (_, i) => question(bucket, i)));
const ALL = { easy: 10, medium: 10, hard: 10 };

/** The simulated weak design: its `experience` row is one seat on `sim/novice-a`. */
const DESIGN = simDemoModes({ idPrefix: 'plan', company: 'PLAN' })[1].config;
const SEAT = CATALOG.find((e) => e.id === 'sim/novice-a');

/**
 * The rule, by hand. At the experience tier a call is one express seat call: the prompt in, half the seat's output
 * allowance out (what a quote expects), at the engine's catalog price per million tokens, rounded up to the
 * micro-dollar. A plan pays that and nothing else (no platform fee, no mode fee); a test run 25% off it, per
 * question, rounded down.
 */
function planTestRunMicros(questions: readonly Question[]): number {
  assert.ok(SEAT && DESIGN.tiers.experience?.seats.join() === SEAT.id);
  const out = Math.round(DESIGN.seatMaxOutputTokens / 2);
  let total = 0;
  for (const q of questions) {
    const tokensIn = countMessagesTokens([{ role: 'user', content: q.question }]);
    const millionths = tokensIn * Math.round(SEAT.inputUsdPerMtok * 1e6) + out * Math.round(SEAT.outputUsdPerMtok * 1e6);
    const realCost = Math.ceil(millionths / 1e6);
    total += Math.floor((realCost * 3) / 4);
  }
  return total;
}

const micros = (usd: unknown): number => Math.round(Number(usd) * 1e6);
type Batch = { state: string; billed_usd: number; refunded_usd: number };

describe('runs billed to a plan: a connected app’s test runs pay real cost on the person’s plan (Form B)', function () {
  this.timeout(600_000);
  let api: Api;
  let workers: { stop(): Promise<void> };
  let receiver: RedirectReceiver;
  let redirectUrl: string;
  let person: { personId: string; orgId: string; email: string };
  let plan: Plan;
  let mode: ModeRecord;
  /** The first run launched through the app (completed). */
  let planRunId: string;
  /** A mode with no runs yet, so the advisor recommends one (and quotes it). */
  let fresh: ModeRecord;
  /** A mode another organisation owns and lists in the marketplace. */
  let strangersMode: string;
  let token: string;
  let orgKey: string;
  const setId = `qs_${randomUUID().slice(0, 8)}`;
  const expected = planTestRunMicros(QUESTIONS);

  // The spec's questions alone, priced by hand above: the equal-cost arms add their own (runs/equal-cost.test.ts).
  const tests = (body: Record<string, unknown>, idempotencyKey?: string): Promise<Reply> =>
    call(api, 'POST', '/v1/tests', {
      key: token,
      body: { model: mode.ticker, questions: ALL, tiers: ['free'], svc: { question_set: setId, baselines: false }, ...body },
      ...(idempotencyKey && { headers: { 'Idempotency-Key': idempotencyKey } }),
    });
  const setPlan = async (terms: { tiers?: string[]; allowance?: number }): Promise<void> => {
    await stack()
      .db('plans')
      .where({ id: plan.id })
      .update({
        ...(terms.tiers && { tiers: terms.tiers }),
        ...(terms.allowance !== undefined && { monthly_allowance_micros: terms.allowance }),
      });
  };

  before(async () => {
    // Engines that take a moment and one question in flight per run: a 30-question run is still going when cancelled.
    workers = await startProductWorkers({ QUORUM_SIM_LATENCY: 'fixed:100' });
    api = await startApi('B', { runs: { testsPerDay: 20, certificationsPerDay: 3, window: 1 } });
    receiver = new RedirectReceiver();
    person = await newPerson();
    plan = await testPlan({ tiers: ['experience'] });
    await assignPlan(stack().db, { personId: person.personId, planId: plan.id });
    mode = await upsertMode(stack().db, {
      id: `plan-${randomUUID().slice(0, 8)}`,
      ticker: uniqueTicker('PLRN'),
      orgId: person.orgId,
      name: 'Plan runs (test)',
      description: null,
      useWhen: 'Testing runs billed to a plan.',
      published: true,
      config: DESIGN,
    });
    fresh = await upsertMode(stack().db, { ...mode, id: `plan-${randomUUID().slice(0, 8)}`, ticker: uniqueTicker('PLAD') });
    await saveQuestionSet(stack().db, { id: setId, orgId: person.orgId, name: 'thirty', questions: QUESTIONS });
    orgKey = await newKey(person.orgId);
    strangersMode = (await demoModes((await newOrg(1)).orgId)).strong.B;
    redirectUrl = await receiver.start();
    const app = new DesktopApp(redirectUrl, 'Lab notebook');
    await signIn(api, app, receiver, person.email, 'v1');
    token = app.tokens()?.access_token ?? '';
    assert.ok(token, 'the app holds a /v1 access token');
  });
  after(async () => {
    await receiver.close();
    await api.close();
    await workers.stop();
  });

  it('prices and launches a test run at real engine cost, 25% off per question, billed to the plan, never the balance', async () => {
    const balance = await moneySnapshot(person.orgId);
    const dry = await tests({ dry_run: true });
    assert.equal(dry.status, 200, JSON.stringify(dry.body));
    assert.equal(micros(dry.body.total_cost_usd), expected, 'the dry run prices 75% of each question’s real engine cost');
    // An API key of the same organisation pays the platform fee and the mode fee on top.
    const keyDry = await call(api, 'POST', '/v1/tests', {
      key: orgKey,
      body: { model: mode.ticker, questions: ALL, tiers: ['free'], svc: { question_set: setId }, dry_run: true },
    });
    assert.equal(keyDry.status, 200, JSON.stringify(keyDry.body));
    assert.ok(micros(keyDry.body.total_cost_usd) > expected, 'the plan pays no fee');

    const launched = await tests({}, `plan-run-${randomUUID()}`);
    assert.equal(launched.status, 200, JSON.stringify(launched.body));
    const batchId = String(launched.body.batch_id);
    planRunId = batchId;
    assert.equal(micros(launched.body.billed_usd), expected, 'the launch bills its dry run');
    const row = (await stack().db('runs').where({ id: batchId }).first('plan_person_id', 'plan_id', 'billed_micros')) as {
      plan_person_id: string;
      plan_id: string;
      billed_micros: bigint;
    };
    assert.deepEqual([row.plan_person_id, row.plan_id, Number(row.billed_micros)], [person.personId, plan.id, expected]);

    const done = await untilEnded(api, token, 'tests', batchId);
    const batch = done.body.batch as Batch;
    assert.equal(batch.state, 'completed', JSON.stringify(done.body));
    const kept = micros(batch.billed_usd) - micros(batch.refunded_usd);
    const usage = await planUsage(stack().db, person.personId);
    assert.deepEqual(
      [usage.runs, Number(usage.runsMicros), Number(usage.chargedMicros)],
      [1, kept, kept],
      'the plan’s usage shows the run',
    );
    assert.equal(await moneySnapshot(person.orgId), balance, 'the organisation’s balance and ledger are untouched');
  });

  it('a refund of a plan’s run gives its allowance back', async () => {
    const before = await planUsage(stack().db, person.personId);
    const launched = await tests({}, `plan-cancel-${randomUUID()}`);
    assert.equal(launched.status, 200, JSON.stringify(launched.body));
    const batchId = String(launched.body.batch_id);
    const held = await planUsage(stack().db, person.personId);
    assert.equal(Number(held.chargedMicros - before.chargedMicros), expected, 'charged to the plan up front');

    const cancelled = await call(api, 'POST', `/v1/tests/${batchId}/cancel`, { key: token });
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
    const batch = (await untilEnded(api, token, 'tests', batchId)).body.batch as Batch;
    assert.equal(batch.state, 'cancelled');
    const refunded = micros(batch.refunded_usd);
    assert.ok(refunded > 0, 'unjudged questions were credited back');
    const after = await planUsage(stack().db, person.personId);
    assert.equal(Number(after.chargedMicros - before.chargedMicros), expected - refunded, 'the plan keeps only what the run kept');
    assert.equal(Number(after.remainingMicros), plan.monthlyAllowanceMicros - Number(after.chargedMicros));
  });

  it('refuses a run that would pass the allowance (402 plan_limit_reached) before anything runs; one that fits exactly launches', async () => {
    const used = Number((await planUsage(stack().db, person.personId)).chargedMicros);
    await setPlan({ allowance: used + expected - 1 });
    const runsBefore = await stack().db('runs').where({ org_id: person.orgId }).count<{ count: string }[]>('* as count');
    const refused = await tests({}, `plan-limit-${randomUUID()}`);
    assert.equal(refused.status, 402, JSON.stringify(refused.body));
    assert.equal(refused.body.error?.code, 'plan_limit_reached');
    const runsAfter = await stack().db('runs').where({ org_id: person.orgId }).count<{ count: string }[]>('* as count');
    assert.deepEqual(runsAfter, runsBefore, 'no run was written');
    assert.equal(Number((await planUsage(stack().db, person.personId)).chargedMicros), used, 'nothing was charged');

    await setPlan({ allowance: used + expected });
    const fits = await tests({}, `plan-fits-${randomUUID()}`);
    assert.equal(fits.status, 200, JSON.stringify(fits.body));
    assert.equal((await planUsage(stack().db, person.personId)).remainingMicros, 0n);
    const cancelled = await call(api, 'POST', `/v1/tests/${String(fits.body.batch_id)}/cancel`, { key: token });
    assert.equal(cancelled.status, 200);
    await setPlan({ allowance: plan.monthlyAllowanceMicros });
  });

  it('launches only on a mode the organisation owns (403 mode_not_owned) and of the plan’s tiers (403 tier_not_permitted)', async () => {
    // Another organisation's listed mode, and the platform's panel: callable, but not this organisation's to run.
    for (const model of [strangersMode, 'QRM:PANL']) {
      const refused = await tests({ model, dry_run: true, svc: undefined });
      assert.deepEqual([refused.status, refused.body.error?.code], [403, 'mode_not_owned'], model);
    }
    // The plan includes the experience tier only: a plus-tier test run and a certification (plus) are above it.
    const plus = await tests({ tiers: ['plus'], dry_run: true });
    assert.deepEqual([plus.status, plus.body.error?.code], [403, 'tier_not_permitted']);
    const certify = await call(api, 'POST', '/v1/certify', { key: token, body: { model: mode.ticker, dry_run: true } });
    assert.deepEqual([certify.status, certify.body.error?.code], [403, 'tier_not_permitted']);
  });

  it('a plan’s certification costs its questions’ real cost, never more than the $50 an API key pays', async () => {
    await setPlan({ tiers: ['experience', 'plus'] });
    const onPlan = await call(api, 'POST', '/v1/certify', { key: token, body: { model: mode.ticker, dry_run: true } });
    assert.equal(onPlan.status, 200, JSON.stringify(onPlan.body));
    const onKey = await call(api, 'POST', '/v1/certify', { key: orgKey, body: { model: mode.ticker, dry_run: true } });
    assert.equal(onKey.status, 200, JSON.stringify(onKey.body));
    assert.equal(micros(onKey.body.total_cost_usd), 50_000_000);
    const planPrice = micros(onPlan.body.total_cost_usd);
    assert.ok(planPrice > 0 && planPrice < 50_000_000, `a simulated mode’s 150 questions cost less than $50 (${planPrice} µ$)`);
    await setPlan({ tiers: ['experience'] });
  });

  it('the advisor’s quotes bill where they were asked: approving one elsewhere is 403 payer_mismatch', async () => {
    await setPlan({ tiers: ['experience', 'plus'] });
    const app = await connectFromNothing(api, new DesktopApp(redirectUrl, 'Desk agent'), receiver, person.email);
    const keyClient = await connect(api, orgKey);
    try {
      const ask = async (client: Client, model: string): Promise<Record<string, unknown>> => {
        const result = await client.callTool({ name: 'ask_advisor', arguments: { model } });
        assert.notEqual(result.isError, true, JSON.stringify(result));
        return json(result);
      };
      const advice = await ask(app, fresh.ticker);
      const onPlan = advice.quote as { quote_id: string; payer: string; price_usd: number } | undefined;
      assert.ok(onPlan, `the app got a quote: ${JSON.stringify(advice)}`);
      assert.equal(onPlan.payer, 'plan');
      const byKey = refusal(await keyClient.callTool({ name: 'approve_quote', arguments: { quote_id: onPlan.quote_id } }));
      assert.deepEqual([byKey.code, byKey.status], ['payer_mismatch', 403]);

      const onOrg = (await ask(keyClient, fresh.ticker)).quote as { quote_id: string; payer: string } | undefined;
      assert.ok(onOrg, 'the key got a quote');
      assert.equal(onOrg.payer, 'organisation');
      const byApp = refusal(await app.callTool({ name: 'approve_quote', arguments: { quote_id: onOrg.quote_id } }));
      assert.deepEqual([byApp.code, byApp.status], ['payer_mismatch', 403]);

      assert.equal((await ask(app, strangersMode)).quote_unavailable, 'mode_not_owned');

      // Approved where it was quoted, the run is billed to the plan at the quoted price, the balance untouched.
      const balance = await moneySnapshot(person.orgId);
      const approved = await app.callTool({ name: 'approve_quote', arguments: { quote_id: onPlan.quote_id } });
      assert.notEqual(approved.isError, true, JSON.stringify(approved));
      const run = json(approved) as { batch_id: string; billed_usd: number };
      const row = (await stack().db('runs').where({ id: run.batch_id }).first('plan_person_id', 'billed_micros')) as {
        plan_person_id: string;
        billed_micros: bigint;
      };
      assert.deepEqual([row.plan_person_id, Number(row.billed_micros)], [person.personId, micros(onPlan.price_usd)]);
      assert.equal(micros(run.billed_usd), micros(onPlan.price_usd));
      assert.equal(await moneySnapshot(person.orgId), balance);
      const stopped = await call(api, 'POST', `/v1/tests/${run.batch_id}/cancel`, { key: token });
      assert.equal(stopped.status, 200, JSON.stringify(stopped.body));
    } finally {
      await app.close();
      await keyClient.close();
      await setPlan({ tiers: ['experience'] });
    }
  });

  it('the audit finds the plan’s runs clean, and names a plan’s run the balance was charged for', async () => {
    const scope = { orgIds: [person.orgId] };
    assert.deepEqual(await audit(stack().db, stack().env.client, scope), []);
    const trx = await stack().db.transaction();
    try {
      await postEntries(trx, person.orgId, [{ kind: 'test_run_charge', amountMicros: -1n, requestId: planRunId }]);
      const found = await audit(trx, stack().env.client, scope);
      assert.ok(
        found.some((v) => v.invariant === 'charge_differs_from_bill' && v.ids.run_id === planRunId),
        JSON.stringify(found),
      );
    } finally {
      await trx.rollback();
    }
  });
});
