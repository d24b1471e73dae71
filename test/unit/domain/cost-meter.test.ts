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
  it('adds each call: cost, a 5% (service) or 0.5% (own key) platform fee rounded up per call, tokens, reasoning', () => {
    const m = new CostMeter(terms());
    m.charge({ costMicros: 1_001, source: 'service', tokensIn: 100, tokensOut: 50, reasoningTokens: null });
    assert.equal(m.reasoningTokens, null, 'no reasoning reported yet');
    m.charge({ costMicros: 2_000, source: 'own_key', tokensIn: 10, tokensOut: 5, reasoningTokens: 7 });
    // ceil(1,001 × 5%) = 51; 2,000 × 0.5% = 10.
    assert.deepEqual([m.gatewayMicros, m.platformFeeMicros, m.tokensIn, m.tokensOut, m.reasoningTokens], [3_001, 61, 110, 55, 7]);
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

  it('Form B never stops a step: it runs in full and credits back what passed the ceiling', () => {
    const m = new CostMeter(terms({ form: 'B', ceilingMicros: 1 }));
    assert.equal(m.affords([{ engine, tokensIn: 1_000_000, maxOut: 1_000_000 }]), true);
    assert.equal(m.capped, false);
  });
});
