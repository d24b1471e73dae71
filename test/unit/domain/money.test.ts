import fc from 'fast-check';
import assert from 'node:assert/strict';
import { microsToDecimal, microsToUsd, usdToMicros, usdToMicrosAtMost } from '../../../domain/money';

describe('accounts: money in micro-dollars', () => {
  it('parses USD text exactly', () => {
    assert.equal(usdToMicros('5'), 5_000_000n);
    assert.equal(usdToMicros('0.1'), 100_000n);
    assert.equal(usdToMicros('12.345678'), 12_345_678n);
    assert.equal(usdToMicros('-0.000001'), -1n);
    assert.equal(usdToMicros(0.1), 100_000n);
    assert.equal(usdToMicros(19.99), 19_990_000n);
    for (const bad of ['', '1.2345678', '1e3', 'abc', '$5', '1,000', '.5', '5.']) assert.throws(() => usdToMicros(bad), RangeError, bad);
    for (const bad of [NaN, Infinity, 0.0000001, 1e12]) assert.throws(() => usdToMicros(bad), RangeError, String(bad));
  });

  it('formats micros exactly and round-trips', () => {
    assert.equal(microsToDecimal(5_000_000n), '5.00');
    assert.equal(microsToDecimal(1n), '0.000001');
    assert.equal(microsToDecimal(-1_250_000n), '-1.25');
    assert.equal(microsToUsd(3_750_000n), 3.75);
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 15n), max: 10n ** 15n }), (m) => {
        assert.equal(usdToMicros(microsToDecimal(m)), m);
        assert.equal(usdToMicros(microsToUsd(m)), m);
      }),
    );
  });

  it('sums of many small amounts do not drift', () => {
    const total = Array.from({ length: 1000 }, () => usdToMicros('0.1')).reduce((a, b) => a + b, 0n);
    assert.equal(microsToDecimal(total), '100.00');
  });

  it("a caller's positive USD number: exact to the micro-dollar, finer values rounded down, never below one micro", () => {
    // Issue 38 item 11: Math.floor(2.01 * 1e6) is 2,009,999.
    assert.equal(Math.floor(2.01 * 1e6), 2_009_999);
    assert.equal(usdToMicrosAtMost(2.01), 2_010_000n);
    assert.equal(usdToMicrosAtMost(1.001), 1_001_000n);
    assert.equal(usdToMicrosAtMost(0.0000015), 1n);
    assert.equal(usdToMicrosAtMost(0.0000029), 2n);
    assert.equal(usdToMicrosAtMost(1e-9), 1n);
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 10n ** 12n }), (m) => {
        assert.equal(usdToMicrosAtMost(microsToUsd(m)), m);
      }),
    );
  });
});
