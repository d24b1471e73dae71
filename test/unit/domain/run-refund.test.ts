import assert from 'node:assert/strict';
import { runRefundMicros } from '../../../domain/runs';

/** Issue 38 items 7 and 9: no verdict, no charge; otherwise each unjudged question gives back its own price. */
describe('runRefundMicros', () => {
  const cert = { kind: 'certification' as const, billedMicros: 50_000_000, totalQuestions: 150, questionPrices: undefined };
  const judged142 = new Set(Array.from({ length: 142 }, (_, i) => `q${i}`));

  it('a certification keeps its $50 only when it ended completed with a verdict', () => {
    assert.equal(runRefundMicros({ ...cert, state: 'completed', hasVerdict: true, judgedIds: judged142 }), 0);
    // 142 of 150 judged used to keep $47.33 for no verdict; now all of it comes back.
    assert.equal(runRefundMicros({ ...cert, state: 'incomplete', hasVerdict: false, judgedIds: judged142 }), 50_000_000);
    assert.equal(runRefundMicros({ ...cert, state: 'cancelled', hasVerdict: true, judgedIds: judged142 }), 50_000_000);
    assert.equal(runRefundMicros({ ...cert, state: 'failed', hasVerdict: false, judgedIds: new Set() }), 50_000_000);
  });

  const prices = { a: 1_000, b: 2_500, c: 7_000, d: 7_000 };
  const test = { kind: 'test' as const, billedMicros: 17_500, totalQuestions: 4, questionPrices: prices, hasVerdict: false };

  it('a test run without a judged question refunds in full; otherwise its unjudged questions’ own prices', () => {
    assert.equal(runRefundMicros({ ...test, state: 'incomplete', judgedIds: new Set() }), 17_500);
    // b and d unjudged: 2,500 + 7,000 (the count's share, 2 of 4, would be 8,750).
    assert.equal(runRefundMicros({ ...test, state: 'cancelled', judgedIds: new Set(['a', 'c']) }), 9_500);
    assert.equal(runRefundMicros({ ...test, state: 'completed', judgedIds: new Set(['a', 'b', 'c', 'd']) }), 0);
  });

  it('a run launched before prices were kept refunds the unjudged share of its charge', () => {
    // ⌊17,500 × 3 / 4⌋ = 13,125.
    assert.equal(runRefundMicros({ ...test, questionPrices: undefined, state: 'cancelled', judgedIds: new Set(['a']) }), 13_125);
  });
});
