import assert from 'node:assert/strict';
import { CostMeter, type MeterTerms } from '../../../domain/cost-meter';
import { SYSTEM_MODES } from '../../../domain/modes';

const fees = SYSTEM_MODES[0].config.fees; // light 2,000 / medium 5,000 / deep 10,000; express 1,000; $0.5 per Mtok input
const terms = (over: Partial<MeterTerms> = {}): MeterTerms => ({
  form: 'A',
  fees,
  depth: 'medium',
  lane: 'panel',
  ceilingMicros: 100_000,
  ...over,
});
const engine = { inputUsdPerMtok: 2, outputUsdPerMtok: 8, ownKey: false };

describe('cost meter: what each call cost, and whether the next step is affordable', () => {
  it('a service-key call is billed at cost; an own-key call is billed by its provider, so only its 0.5% fee is ours', () => {
    const m = new CostMeter(terms());
    m.charge({ costMicros: 1_001, source: 'service', tokensIn: 100, tokensOut: 50, reasoningTokens: null });
    assert.equal(m.reasoningTokens, null, 'no reasoning reported yet');
    m.charge({ costMicros: 2_000, source: 'own_key', tokensIn: 10, tokensOut: 5, reasoningTokens: 7 });
    // Spec 01 items 11 and 13: the own-key call's $0.002 is on the customer's provider bill, not ours.
    assert.equal(m.gatewayMicros, 1_001);
    assert.equal(m.realCostMicros, 3_001);
    // 5% of 1,001 = 50.05 → 50; 0.5% of 2,000 = 10.
    assert.equal(m.platformFeeMicros, 60);
    assert.deepEqual([m.tokensIn, m.tokensOut, m.reasoningTokens], [110, 55, 7]);
  });

  it('the platform fee is rounded once per source on the summed cost, not per call', () => {
    const m = new CostMeter(terms());
    // Nine calls of 1,003 micro-dollars: per call 5% is 50.15, which rounded up per call would bill 9 × 51 = 459.
    for (let i = 0; i < 9; i++) m.charge({ costMicros: 1_003, source: 'service', tokensIn: 1, tokensOut: 1, reasoningTokens: null });
    // 5% of 9,027 = 451.35 → 451: the published rate of gateway_usd to the micro-dollar.
    assert.equal(m.gatewayMicros, 9_027);
    assert.equal(m.platformFeeMicros, 451);
    // Own-key calls are summed apart, at their own rate: 0.5% of 3 × 333 = 4.995 → 5 (per call: 3 × 2 = 6).
    for (let i = 0; i < 3; i++) m.charge({ costMicros: 333, source: 'own_key', tokensIn: 1, tokensOut: 1, reasoningTokens: null });
    assert.equal(m.platformFeeMicros, 456);
  });

  it('on a plan: real cost only, no fee', () => {
    const m = new CostMeter(terms({ realCostOnly: true, ceilingMicros: null }));
    m.charge({ costMicros: 1_000, source: 'service', tokensIn: 1, tokensOut: 1, reasoningTokens: null });
    assert.deepEqual([m.gatewayMicros, m.platformFeeMicros, m.modeFeeMicros()], [1_000, 0, 0]);
  });

  it("prices the mode's fee: Form A by depth or the express surcharge, Form B per token with output at 4x", () => {
    assert.equal(new CostMeter(terms({ depth: 'deep' })).modeFeeMicros(), 10_000);
    assert.equal(new CostMeter(terms({ lane: 'express' })).modeFeeMicros(), 1_000);
    const b = new CostMeter(terms({ form: 'B' }));
    b.charge({ costMicros: 0, source: 'service', tokensIn: 1_000, tokensOut: 500, reasoningTokens: null });
    // 1,000 × 0.5 + 500 × 2 micro-dollars.
    assert.equal(b.modeFeeMicros(), 1_500);
  });

  it('Form A: a step fits while spent + fee + the step at its full output allowance stays within the ceiling', () => {
    const m = new CostMeter(terms({ ceilingMicros: 20_000 }));
    m.charge({ costMicros: 5_000, source: 'service', tokensIn: 0, tokensOut: 0, reasoningTokens: null });
    // Spent 5,000 + 250 fee + 5,000 surcharge = 10,250. A call of 1,000 in and 1,000 out costs 10,000 + 500 fee.
    assert.equal(m.affords([{ engine, tokensIn: 1_000, maxOut: 1_000 }]), false);
    assert.equal(m.capped, true);
    const roomy = new CostMeter(terms({ ceilingMicros: 20_750 }));
    roomy.charge({ costMicros: 5_000, source: 'service', tokensIn: 0, tokensOut: 0, reasoningTokens: null });
    assert.equal(roomy.affords([{ engine, tokensIn: 1_000, maxOut: 1_000 }]), true, 'exactly at the ceiling fits');
    assert.equal(roomy.capped, false);
  });

  it('Form A: an own-key step costs the caller only its fee, so it fits where a service-key step does not', () => {
    const own = { ...engine, ownKey: true };
    const m = new CostMeter(terms({ ceilingMicros: 10_100 }));
    // Surcharge 5,000. A call of 1,000 in and 1,000 out costs 10,000: on the service's keys 10,000 + 500 fee passes
    // 10,100; on the caller's own key it is 50 (0.5%), which fits.
    assert.equal(m.affords([{ engine, tokensIn: 1_000, maxOut: 1_000 }]), false);
    assert.equal(new CostMeter(terms({ ceilingMicros: 10_100 })).affords([{ engine: own, tokensIn: 1_000, maxOut: 1_000 }]), true);
  });

  it('Form B never stops a step: it runs in full and credits back what passed the ceiling', () => {
    const m = new CostMeter(terms({ form: 'B', ceilingMicros: 1 }));
    assert.equal(m.affords([{ engine, tokensIn: 1_000_000, maxOut: 1_000_000 }]), true);
    assert.equal(m.capped, false);
  });
});
