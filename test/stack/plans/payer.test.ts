import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { formA } from '../../../api/forms/a';
import { formB } from '../../../api/forms/b';
import { createCompletion } from '../../../operations/completion';
import { planHoldMicros } from '../../../operations/estimate';
import { getBalance, listLedger } from '../../../db/repositories/ledger';
import { planUsage, planUsageRow } from '../../../db/repositories/plans';
import { findMode } from '../../../db/repositories/modes';
import type { Form } from '../../../domain/form';
import type { Outcome } from '../../../domain/outcome';
import { countMessagesTokens } from '../../../domain/tokens';
import { EXPRESS, keyPrincipal, moneySnapshot, USER } from '../api/helpers';
import { customMode, startProductWorkers } from '../deliberation/helpers';
import { stack } from '../../harness/stack';
import { appCaller, operationDeps, testPlan } from './helpers';

interface Charges {
  gateway_usd: number;
  platform_fee_usd: number;
  mode_fee_usd: number;
  cap_credit_usd: number;
  billed_usd: number;
}
interface ReceiptB {
  receipt: { payer: string; billed_usd: number; cap_credit_usd: number; charges: Charges; seats: { fee_usd: number; fee_rate: number }[] };
}

/** Billed is the engines' real cost and nothing else, in the outcome and in both Forms' bodies. */
function assertRealCostOnly(form: Form, o: Outcome): void {
  const m = o.money;
  assert.equal(o.payer, 'plan');
  assert.ok(m.gatewayMicros > 0, 'the engines cost something');
  assert.deepEqual(
    [m.billedMicros, m.platformFeeMicros, m.modeFeeMicros, m.capCreditMicros, m.ceilingMicros],
    [m.gatewayMicros, 0, 0, 0, null],
    'no platform fee, no mode fee, no credit, no ceiling',
  );
  assert.equal(o.status, 'succeeded', 'a plan call is never capped');
  assert.ok(o.seatPasses.every((p) => p.feeMicros === 0 && p.feeRatePpm === 0 && p.source === 'service'));
  if (form === 'A') {
    const svc = formA.completion(o, false).svc as Record<string, unknown>;
    assert.deepEqual([svc.capped, svc.surcharge_usd, svc.billed_usd], [false, 0, m.billedMicros / 1e6]);
    assert.notEqual(o.finishReason, 'cost_cap');
    return;
  }
  const { receipt } = formB.receipt(o, false) as unknown as ReceiptB;
  assert.equal(receipt.payer, 'plan');
  assert.deepEqual(
    [receipt.charges.platform_fee_usd, receipt.charges.mode_fee_usd, receipt.charges.cap_credit_usd, receipt.cap_credit_usd],
    [0, 0, 0, 0],
  );
  assert.equal(receipt.billed_usd, receipt.charges.gateway_usd);
  assert.ok(receipt.seats.every((s) => s.fee_usd === 0 && s.fee_rate === 0));
  const svc = formB.completion(o, false).svc as Record<string, unknown>;
  assert.deepEqual([svc.capped, svc.surcharge_usd, svc.platform_fee_usd, svc.cap_credit_usd], [false, 0, 0, 0]);
}

const prompt = (): ReturnType<typeof USER> => USER(`Explain why ${randomUUID().slice(0, 6)} is not a prime, step by step.`);

describe('plans: billing by payer (a connected app pays real cost on its plan; an API key keeps the rules)', function () {
  this.timeout(180_000);
  let workers: { stop(): Promise<void> };

  before(async () => {
    workers = await startProductWorkers({});
  });
  after(async () => {
    await workers.stop();
  });

  for (const form of ['A', 'B'] as const) {
    it(`Form ${form}: an express call on a plan bills Σ seat costs to the plan's ledger; the organisation's balance and ledger are untouched`, async () => {
      const { db } = stack();
      const { org, person, auth } = await appCaller(); // free: the express mode seats the experience tier
      const before = await moneySnapshot(org.orgId);
      const messages = prompt();
      const { outcome } = await createCompletion(operationDeps(form), auth, { body: { model: EXPRESS[form], messages } });
      assertRealCostOnly(form, outcome);
      assert.equal(outcome.lane, 'express');
      assert.equal(
        outcome.money.billedMicros,
        outcome.seatPasses.reduce((n, p) => n + p.realCostMicros, 0),
      );
      assert.equal(await moneySnapshot(org.orgId), before, 'balance, hold and ledger as before');

      // The plan's ledger: one row, the hold taken before the engines ran, the charge = billed.
      const mode = await findMode(db, { orgId: org.orgId, form, model: EXPRESS[form] });
      assert.ok(mode);
      const hold = planHoldMicros(operationDeps(form), { mode, tier: 'plus', messages, promptTokens: countMessagesTokens(messages) });
      const row = await planUsageRow(db, outcome.requestId);
      assert.deepEqual(row && [row.orgId, row.personId, row.planId, row.state, row.heldMicros, row.chargedMicros], [
        org.orgId,
        person.id,
        'free',
        'settled',
        BigInt(hold),
        BigInt(outcome.money.billedMicros),
      ]);
      assert.ok(hold >= outcome.money.billedMicros, 'the hold bounds what the call was expected to cost at most');
      const usage = await planUsage(db, person.id);
      assert.deepEqual([usage.chargedMicros, usage.heldMicros, usage.calls], [BigInt(outcome.money.billedMicros), 0n, 1]);
      assert.equal(usage.remainingMicros, 1_000_000n - BigInt(outcome.money.billedMicros));
      // The stored receipt is the one served later.
      const stored = (await db('receipts')
        .where({ request_id: outcome.requestId })
        .first('billed_micros', 'platform_fee_micros', 'mode_fee_micros')) as {
        billed_micros: bigint;
        platform_fee_micros: bigint;
        mode_fee_micros: bigint;
      };
      assert.deepEqual(
        [stored.billed_micros, stored.platform_fee_micros, stored.mode_fee_micros],
        [BigInt(outcome.money.billedMicros), 0n, 0n],
      );
    });
  }

  for (const form of ['A', 'B'] as const) {
    it(`Form ${form}: a panel call on a plan pays the real cost of every engine that ran, past the mode's ceiling, which holds the organisation's own key`, async () => {
      const { db } = stack();
      const plan = await testPlan({ tiers: ['experience', 'plus', 'pro'] });
      const { org, auth } = await appCaller(plan);
      // A panel whose own ceiling (one micro-dollar) any call passes; critique always, so every step runs.
      const mode = await customMode(org.orgId, 'quorum-debate', { ceilingMicros: 1 });
      const model = form === 'A' ? mode.id : mode.ticker;
      const before = await moneySnapshot(org.orgId);
      const { outcome } = await createCompletion(operationDeps(form), auth, { body: { model, messages: prompt(), tier: 'pro' } });
      assertRealCostOnly(form, outcome);
      assert.equal(outcome.lane, 'panel');
      assert.ok(outcome.staff.judge && outcome.staff.synthesis && outcome.rounds > 1, 'every step ran: nothing stopped at a ceiling');
      const seats = outcome.seatPasses.reduce((n, p) => n + p.realCostMicros, 0);
      assert.ok(outcome.money.gatewayMicros > seats, 'the engines’ cost is the seats’ and the judge’s and the synthesis’');
      assert.ok(outcome.money.billedMicros > mode.config.ceilingMicros);
      assert.equal(await moneySnapshot(org.orgId), before);
      assert.equal((await planUsageRow(db, outcome.requestId))?.chargedMicros, BigInt(outcome.money.billedMicros));

      // The organisation's own key on the same mode is held to its ceiling, as today.
      const viaKey = await createCompletion(operationDeps(form), await keyPrincipal(org.ownerKey), {
        body: { model, messages: prompt(), tier: 'pro' },
      });
      assert.equal(viaKey.outcome.payer, 'service');
      // Form A stops at the mode's ceiling; Form B's is the higher of $2 and the mode's, over which it would credit back.
      if (form === 'A') assert.deepEqual([viaKey.outcome.status, viaKey.outcome.money.ceilingMicros], ['capped', 1]);
      else assert.equal(viaKey.outcome.money.ceilingMicros, 2_000_000);
    });
  }

  it("an API-key call keeps today's rules: platform fee, mode fee, its ceiling, payer service, the organisation's ledger", async () => {
    const { db } = stack();
    const { org } = await appCaller();
    const auth = await keyPrincipal(org.ownerKey);
    const balance = await getBalance(db, org.orgId);
    const { outcome } = await createCompletion(operationDeps('B'), auth, { body: { model: EXPRESS.B, messages: prompt() } });
    const m = outcome.money;
    assert.equal(outcome.payer, 'service');
    // 5% of the engines' cost, rounded once to the micro-dollar (spec 01 item 11; issue 26 item 15).
    assert.equal(m.platformFeeMicros, Math.round(m.gatewayMicros / 20));
    assert.ok(m.modeFeeMicros > 0);
    assert.equal(m.ceilingMicros, 2_000_000, 'Form B: the higher of $2 and the mode’s ceiling');
    assert.equal(m.billedMicros, m.gatewayMicros + m.platformFeeMicros + m.modeFeeMicros);
    const charge = (await listLedger(db, org.orgId, 10)).find((e) => e.kind === 'charge' && e.requestId === outcome.requestId);
    assert.equal(charge?.amountMicros, -BigInt(m.billedMicros));
    assert.equal((await getBalance(db, org.orgId)).balanceMicros, balance.balanceMicros - BigInt(m.billedMicros));
    assert.equal(await planUsageRow(db, outcome.requestId), undefined, 'the plans’ ledger has no row for it');
  });
});
