import { WorkflowNotFoundError } from '@temporalio/client';
import assert from 'node:assert/strict';
import { QuorumError } from '../../../domain/errors';
import { SYSTEM_MODES } from '../../../domain/modes';
import { getBalance, topUp } from '../../../db/repositories/ledger';
import { getReceipt } from '../../../db/repositories/requests';
import { workflowIds } from '../../../domain/workflow-ids';
import { QuorumLane, QuorumMode, QuorumOrg, QuorumStatus } from '../../../workflows/search-attributes';
import { stack } from '../../harness/stack';
import {
  assertHoldRefused,
  assertNothingBilled,
  chargeCount,
  customMode,
  ledgerSum,
  deliberate,
  newOrg,
  startProductWorkers,
  systemMode,
  withReceiptsRefused,
} from './helpers';

describe('deliberation workflow on sim engines (offline)', function () {
  this.timeout(120_000);
  let workers: { stop(): Promise<void> };
  before(async () => {
    workers = await startProductWorkers({});
  });
  after(() => workers.stop());

  it('runs a panel with critique rounds, a judge and every receipt field filled, billed exactly once', async () => {
    const org = await newOrg();
    const before = await getBalance(stack().db, org.orgId);
    const { outcome: o, replayed } = await deliberate({ org, mode: await systemMode('quorum-debate') }, 'panel-debate');
    assert.equal(replayed, false);
    assert.equal(o.status, 'succeeded');
    assert.equal(o.lane, 'panel');
    assert.equal(o.rounds, 3, 'the debate mode critiques on every round');
    assert.equal(o.seats, 3);
    assert.equal(o.seatsAnswered, 3);
    assert.equal(o.seatPasses.length, 9, 'one row per seat per round');
    assert.deepEqual(new Set(o.seatPasses.map((r) => r.role)), new Set(['seat1', 'seat2', 'seat3']));
    for (const r of o.seatPasses) {
      assert.ok(r.tokensIn > 0 && r.tokensOut > 0 && r.realCostMicros > 0 && r.feeMicros > 0, JSON.stringify(r));
      assert.equal(r.feeRatePpm, 50_000);
      assert.equal(typeof r.judgeScore, 'number');
      assert.ok(Date.parse(r.endedAt) >= Date.parse(r.startedAt));
      assert.match(r.modelUsed, /^sim\//);
      // Offline, the designed engines cannot run: the receipt says what was meant to sit there.
      assert.equal(r.fallbackUsed, true);
      assert.match(r.originalModel ?? '', /^(openai|anthropic|google)\//);
    }
    assert.deepEqual(
      o.seatPasses.filter((r) => r.isBest).map((r) => [r.role, r.round]),
      [[o.bestSeat?.role, 3]],
      'only the row whose answer won: the best seat in the last round',
    );
    assert.equal(o.bestSeatJudgedBy, 'llm');
    assert.ok(o.bestSeat && o.bestSeat.content.length > 0);
    assert.equal(typeof o.divergenceFirst, 'number');
    assert.equal(typeof o.divergenceFinal, 'number');
    assert.equal(typeof o.converged, 'boolean');
    assert.equal(o.deliberation.length, 3);
    assert.ok(o.staff.judge?.modelUsed?.startsWith('sim/'));
    assert.ok(o.staff.synthesis?.modelUsed?.startsWith('sim/'), 'the debate mode always synthesises');
    assert.equal(o.staff.grounding.fired, false);
    assert.equal(o.substitutions.length, 3);
    assert.ok(o.usage.promptTokens > 0 && o.usage.completionTokens > 0);
    const gross = o.money.gatewayMicros + o.money.platformFeeMicros + o.money.modeFeeMicros;
    assert.equal(o.money.billedMicros, gross);
    assert.equal(o.money.capCreditMicros, 0);
    assert.ok(o.money.modeFeeMicros > 0);

    const after = await getBalance(stack().db, org.orgId);
    assert.equal(before.balanceMicros - after.balanceMicros, BigInt(o.money.billedMicros));
    assert.equal(after.reservedMicros, 0n, 'the reservation is released at settle');
    assert.equal(await chargeCount(org.orgId), 1);
    assert.equal(await ledgerSum(org.orgId), after.balanceMicros);

    const receipt = await getReceipt(stack().db, org.orgId, o.requestId);
    assert.ok(receipt?.available);
    assert.deepEqual(receipt.outcome, o);
    const seatPasses = await stack().db('receipt_seats').where({ request_id: o.requestId });
    assert.equal(seatPasses.length, 9);
    assert.equal(await getReceipt(stack().db, (await newOrg()).orgId, o.requestId), undefined, 'another organisation cannot see it');
  });

  it('runs the express lane: one seat, no judge, no synthesis, converged null', async () => {
    const org = await newOrg();
    const { outcome: o } = await deliberate(
      { org, mode: await systemMode('quorum-express'), content: 'What is the capital of France?' },
      'express',
    );
    assert.equal(o.lane, 'express');
    assert.equal(o.seats, 1);
    assert.equal(o.rounds, 1);
    assert.equal(o.converged, null);
    assert.equal(o.staff.judge, null);
    assert.equal(o.staff.synthesis, null);
    assert.equal(o.bestSeatJudgedBy, 'express_lane');
    assert.equal(o.answer, o.bestSeat?.content);
    assert.match(o.seatPasses[0].modelUsed, /^sim\/.*-experience$/);
  });

  it('the experience tier is the express lane on every seeded mode, whatever its express policy; the receipt says so', async () => {
    const org = await newOrg();
    for (const seed of SYSTEM_MODES) {
      // A hard prompt: the classifier alone would send it to a panel.
      const { outcome: o } = await deliberate({ org, mode: await systemMode(seed.id), tier: 'experience' });
      assert.equal(o.lane, 'express', seed.id);
      assert.deepEqual(
        [o.seats, o.rounds, o.converged, o.staff.judge, o.staff.synthesis, o.bestSeatJudgedBy],
        [1, 1, null, null, null, 'express_lane'],
        seed.id,
      );
      assert.match(o.seatPasses[0].modelUsed, /^sim\/.*-experience$/, seed.id);
      const row = await stack().db('receipts').where({ request_id: o.requestId }).first('lane', 'tier');
      assert.deepEqual(row, { lane: 'express', tier: 'experience' }, seed.id);
      const receipt = await getReceipt(stack().db, org.orgId, o.requestId);
      assert.equal(receipt?.available && receipt.outcome.lane, 'express', seed.id);
    }
  });

  it('reports finish_reason length when the synthesis is cut off, after retrying cut-off seats once with more room', async () => {
    const org = await newOrg();
    const mode = await customMode(org.orgId, 'quorum-debate', { seatMaxOutputTokens: 16, rounds: 1 });
    const { outcome: o } = await deliberate({ org, mode }, 'truncated-synthesis');
    assert.ok(o.staff.synthesis);
    assert.equal(o.finishReason, 'length');
    // Each seat was cut at 16 tokens and retried at 32: the row holds both attempts, as the bill does.
    for (const r of o.seatPasses) assert.equal(r.tokensOut, 16 + 32);
    assert.equal(o.seatsAnswered, 3, 'a cut-off seat still counts as answered');
  });

  it('Form A: stops before the step that would pass the ceiling, answers with cost_cap, receipt capped, billed at most the ceiling', async () => {
    const org = await newOrg();
    const mode = await customMode(org.orgId, 'quorum-debate', {});
    // Enough for round 1 but not for the judge and critique rounds.
    const probe = await deliberate({ org, mode, form: 'A' });
    const round1 = probe.outcome.seatPasses.filter((r) => r.round === 1).reduce((n, r) => n + r.realCostMicros + r.feeMicros, 0);
    const ceiling = round1 + probe.outcome.money.modeFeeMicros + 10;
    const { outcome: o } = await deliberate({ org, mode, form: 'A', ceilingMicros: ceiling }, 'form-a-capped');
    assert.equal(o.finishReason, 'cost_cap');
    assert.equal(o.status, 'capped');
    assert.ok(o.rounds < 3);
    assert.ok(o.money.billedMicros <= ceiling);
    assert.ok(o.answer.length > 0, 'a capped call still answers');
  });

  it('Form B: runs in full, credits back what passed the ceiling and bills exactly the ceiling', async () => {
    const org = await newOrg();
    const mode = await systemMode('quorum-debate');
    const before = await getBalance(stack().db, org.orgId);
    const ceiling = 1_000; // $0.001: far below what three rounds cost
    const { outcome: o } = await deliberate({ org, mode, form: 'B', ceilingMicros: ceiling }, 'form-b-capped');
    assert.equal(o.rounds, 3, 'Form B does not stop early');
    assert.equal(o.status, 'capped');
    assert.equal(o.finishReason, 'stop');
    assert.ok(o.money.capCreditMicros > 0);
    assert.equal(o.money.billedMicros, ceiling);
    assert.equal(o.money.gatewayMicros + o.money.platformFeeMicros + o.money.modeFeeMicros - o.money.capCreditMicros, ceiling);
    const after = await getBalance(stack().db, org.orgId);
    assert.equal(before.balanceMicros - after.balanceMicros, BigInt(ceiling));
    assert.equal(await ledgerSum(org.orgId), after.balanceMicros);
  });

  it('replays a succeeded key from Postgres without running or billing again; a running key gets 409', async () => {
    const org = await newOrg();
    const mode = await systemMode('quorum-panel');
    const idempotencyKey = `key-${Date.now()}`;
    const [a, b] = await Promise.allSettled([deliberate({ org, mode, idempotencyKey }), deliberate({ org, mode, idempotencyKey })]);
    const ok = [a, b].filter((r) => r.status === 'fulfilled');
    const refused = [a, b].filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    assert.equal(ok.length, 1);
    assert.equal(refused.length, 1);
    assert.ok(refused[0].reason instanceof QuorumError && refused[0].reason.code === 'request_in_progress');
    const first = (ok[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof deliberate>>>).value.outcome;
    const balance = await getBalance(stack().db, org.orgId);
    const again = await deliberate({ org, mode, idempotencyKey });
    assert.equal(again.replayed, true);
    assert.deepEqual(again.outcome, first);
    assert.deepEqual(await getBalance(stack().db, org.orgId), balance);
  });

  it('a test key runs on sim engines and bills nothing', async () => {
    const org = await newOrg();
    const before = await getBalance(stack().db, org.orgId);
    const { outcome: o } = await deliberate({ org, mode: await systemMode('quorum-panel'), keyMode: 'test' });
    assert.deepEqual(
      [o.money.billedMicros, o.money.gatewayMicros, o.money.platformFeeMicros, o.money.modeFeeMicros, o.money.capCreditMicros],
      [0, 0, 0, 0, 0],
    );
    assert.ok(o.seatPasses.every((r) => r.modelUsed.startsWith('sim/')));
    assert.deepEqual(await getBalance(stack().db, org.orgId), before);
  });

  it('insufficient_balance before anything runs: no request row, no workflow, nothing charged', async () => {
    const org = await newOrg(0);
    const before = await getBalance(stack().db, org.orgId);
    await assert.rejects(
      deliberate({ org, mode: await systemMode('quorum-debate'), ceilingMicros: 50_000_000, idempotencyKey: 'too-dear' }),
      (e: unknown) => e instanceof QuorumError && e.code === 'insufficient_balance',
    );
    assert.deepEqual(await getBalance(stack().db, org.orgId), before);
    assert.equal((await stack().db('requests').where({ org_id: org.orgId })).length, 0);
    await assert.rejects(
      stack().env.client.workflow.getHandle(workflowIds.deliberation(org.orgId, 'too-dear')).describe(),
      WorkflowNotFoundError,
    );
  });

  it("insufficient_balance from the workflow's own hold, when the money went between the check and the hold", async () => {
    const org = await newOrg(0);
    const before = await getBalance(stack().db, org.orgId);
    const mode = await systemMode('quorum-panel');
    // The API's check passed; by the time the workflow holds the ceiling, the balance no longer covers it.
    await assertHoldRefused(
      { orgId: org.orgId, apiKeyId: org.keyId, mode, tier: 'plus', ceilingMicros: Number(before.balanceMicros) + 1 },
      before,
      'insufficient_balance',
    );
  });

  it("asks the mode's small classifier model when configured and says which classifier ran; the heuristic answers when it cannot run", async () => {
    const org = await newOrg();
    const base = await systemMode('quorum-panel');
    const withModel = await customMode(org.orgId, 'quorum-panel', {
      staff: { ...base.config.staff, classifier: { engine: 'sim/alpha-experience' } },
    });
    // Recorded: the one path where the workflow classifies (a mode without a classifier model is classified by the API).
    assert.equal((await deliberate({ org, mode: withModel }, 'classifier-model')).outcome.classification.classifiedBy, 'model');
    // No OpenAI key here: that classifier cannot run, so the heuristic answers on the same scale.
    const unreachable = await customMode(org.orgId, 'quorum-panel', {
      staff: { ...base.config.staff, classifier: { engine: 'openai/gpt-4.1-mini' } },
    });
    const h = (await deliberate({ org, mode: unreachable })).outcome.classification;
    assert.equal(h.classifiedBy, 'heuristic');
    assert.ok(h.difficulty >= 0 && h.difficulty <= 1);
  });

  it('sets search attributes and a memo, so an operator finds and reads the call in the Temporal UI', async () => {
    const org = await newOrg();
    const mode = await systemMode('quorum-panel');
    const { outcome } = await deliberate({ org, mode, idempotencyKey: 'findable' });
    const d = await stack().env.client.workflow.getHandle(workflowIds.deliberation(org.orgId, 'findable')).describe();
    assert.equal(d.typedSearchAttributes.get(QuorumOrg), org.orgId);
    assert.equal(d.typedSearchAttributes.get(QuorumMode), mode.ticker);
    assert.equal(d.typedSearchAttributes.get(QuorumLane), outcome.lane);
    assert.equal(d.typedSearchAttributes.get(QuorumStatus), 'succeeded');
    assert.equal(d.memo?.requestId, outcome.requestId);
    assert.match(String(d.memo?.summary), /seats/);
  });

  /** The same capped call made twice under one key. */
  async function cappedTwice(form: 'A' | 'B', modeId: string, ceilingMicros: number) {
    const org = await newOrg();
    const call = { org, mode: await systemMode(modeId), form, ceilingMicros, idempotencyKey: `capped-${form}` };
    const first = await deliberate(call);
    return { org, first, second: await deliberate(call) };
  }

  it('Form B: a capped call is not replayed: a retry with its key runs and bills again, and both receipts stay readable', async () => {
    const { org, first, second } = await cappedTwice('B', 'quorum-panel', 500);
    assert.equal(first.outcome.status, 'capped');
    assert.equal(second.replayed, false);
    assert.notEqual(second.outcome.requestId, first.outcome.requestId);
    assert.equal(await chargeCount(org.orgId), 2);
    for (const o of [first.outcome, second.outcome]) assert.equal((await getReceipt(stack().db, org.orgId, o.requestId))?.available, true);
  });

  it('Form A: a capped call is replayed like any succeeded one', async () => {
    const { first, second: again } = await cappedTwice('A', 'quorum-debate', 5_000);
    assert.equal(first.outcome.finishReason, 'cost_cap');
    assert.equal(again.replayed, true);
    assert.equal(again.outcome.requestId, first.outcome.requestId);
  });

  it('a call refused for its balance leaves no trace: the same key runs once the balance is topped up', async () => {
    const org = await newOrg(0);
    const mode = await systemMode('quorum-panel');
    const ceilingMicros = 20_000_000;
    await assert.rejects(
      deliberate({ org, mode, ceilingMicros, idempotencyKey: 'after-top-up' }),
      (e: unknown) => e instanceof QuorumError && e.code === 'insufficient_balance',
    );
    await topUp(stack().db, { orgId: org.orgId, amountMicros: 50_000_000n });
    const { outcome, replayed } = await deliberate({ org, mode, ceilingMicros, idempotencyKey: 'after-top-up' });
    assert.equal(replayed, false);
    assert.equal(outcome.status, 'succeeded');
    const rows = await stack().db('requests').where({ org_id: org.orgId, idempotency_key: 'after-top-up' }).orderBy('created_at');
    assert.deepEqual(
      rows.map((r: { state: string; superseded_at: Date | null }) => [r.state, r.superseded_at !== null]),
      [['succeeded', false]],
    );
  });

  it('mode_resolution_mismatch: a configuration that does not hash to its version runs nothing and bills nothing', async () => {
    const org = await newOrg();
    const before = await getBalance(stack().db, org.orgId);
    const stored = await systemMode('quorum-panel');
    const altered = { ...stored, config: { ...stored.config, rounds: stored.config.rounds + 1 } };
    await assert.rejects(
      deliberate({ org, mode: altered }, 'mode-mismatch'),
      (e: unknown) => e instanceof QuorumError && e.code === 'mode_resolution_mismatch' && Boolean(e.requestId),
    );
    await assertNothingBilled(org.orgId, before, 'mode_resolution_mismatch');
  });

  it('cost_unreadable: an outcome the database refuses is not billed and keeps its hold released; the same key settles it, no second run', async () => {
    const org = await newOrg();
    const before = await getBalance(stack().db, org.orgId);
    const mode = await systemMode('quorum-panel');
    await withReceiptsRefused(org.orgId, () =>
      assert.rejects(deliberate({ org, mode, idempotencyKey: 'unrecordable' }, 'cost-unreadable'), (e: unknown) => {
        assert.ok(e instanceof QuorumError);
        assert.equal(e.code, 'cost_unreadable');
        assert.doesNotMatch(e.message, /insert into|receipts/i, 'no SQL reaches the caller');
        return true;
      }),
    );
    await assertNothingBilled(org.orgId, before, 'cost_unreadable');
    const failed = await stack().db('requests').where({ org_id: org.orgId }).first('id');
    const { outcome, replayed } = await deliberate({ org, mode, idempotencyKey: 'unrecordable' });
    assert.equal(replayed, false);
    assert.equal(outcome.status, 'succeeded');
    assert.equal(outcome.requestId, failed.id, "the first run's answer, settled now");
    assert.equal((await stack().db('requests').where({ org_id: org.orgId })).length, 1, 'no second run');
    assert.equal(await chargeCount(org.orgId), 1);
    assert.equal((await getReceipt(stack().db, org.orgId, failed.id))?.available, true);
  });
});
