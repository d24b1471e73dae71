import assert from 'node:assert/strict';
import { simulateAttemptSeries, simulateCertifications } from '../../../domain/certification-simulation';
import {
  attemptAlpha,
  attemptVerdict,
  clusteredWinRate,
  fleissKappa,
  normalQuantile,
  positionConsistency,
  studentTQuantile,
  verdictFor,
  wilsonInterval,
} from '../../../domain/statistics';

const close = (actual: number, expected: number, tolerance = 1e-6): void =>
  assert.ok(Math.abs(actual - expected) <= tolerance, `${actual} is not within ${tolerance} of ${expected}`);

describe('domain: certification statistics', () => {
  it('Student t quantiles match the tables', () => {
    const table: [number, number][] = [
      [1, 12.706205],
      [2, 4.302653],
      [3, 3.182446],
      [10, 2.228139],
      [149, 1.976013],
      [1000, 1.962339],
    ];
    for (const [df, t] of table) close(studentTQuantile(0.975, df), t, 1e-6);
    close(studentTQuantile(0.025, 10), -2.228139, 1e-6);
    close(studentTQuantile(0.95, 5), 2.015048, 1e-6);
    close(normalQuantile(0.975), 1.959964, 1e-6);
  });

  it('clusters by question, with the G/(G−1) correction and G−1 degrees of freedom (hand-computed)', () => {
    // Four questions, two judgments each: sums 2, 1.5, 0.5, 1 over N = 8, so p̂ = 5/8 = 0.625.
    // e_g = sum − n_g·p̂ = 0.75, 0.25, −0.75, −0.25; Σe² = 1.25; SE² = (4/3)·1.25/64 = 0.0260417; SE = 0.161374.
    // t(0.975, 3) = 3.182446, so the half width is 0.513565: [0.111435, 1.138565], clamped to [0.111435, 1].
    const scores = [
      ['q1', 1],
      ['q1', 1],
      ['q2', 1],
      ['q2', 0.5],
      ['q3', 0],
      ['q3', 0.5],
      ['q4', 1],
      ['q4', 0],
    ].map(([cluster, score]) => ({ cluster: cluster as string, score: score as number }));
    const w = clusteredWinRate(scores);
    assert.equal(w.judgments, 8);
    assert.equal(w.clusters, 4);
    assert.equal(w.degreesOfFreedom, 3);
    close(w.winRate, 0.625);
    close(w.standardError, 0.161374);
    close(w.interval.low, 0.111435, 1e-5);
    assert.equal(w.interval.high, 1);

    // The same eight scores as eight independent questions: the within-question agreement no longer widens it.
    // e = 0.375 ×4 (the ones), −0.125 (the halves ×2), −0.625 ×2 (the zeros): Σe² = 4·0.140625 + 2·0.015625 + 2·0.390625 = 1.375;
    // SE² = (8/7)·1.375/64 = 0.0245536; SE = 0.156696.
    const apart = clusteredWinRate(scores.map((s, i) => ({ cluster: `x${i}`, score: s.score })));
    close(apart.standardError, 0.156696);
    assert.equal(apart.degreesOfFreedom, 7);
  });

  it('gives no interval narrower than [0, 1] from fewer than two questions', () => {
    assert.deepEqual(clusteredWinRate([{ cluster: 'q', score: 1 }]).interval, { low: 0, high: 1 });
    assert.deepEqual(clusteredWinRate([]).interval, { low: 0, high: 1 });
  });

  it('gives a conservative interval, not a zero-width one, when every question scored alike (issue 38 item 6)', () => {
    // All wins on 10 questions: p̂ = 1 and the clustered SE is 0. Wilson at p̂ = 1 over n = 10 questions has the closed
    // form low = n / (n + z²) with z = 1.959964 (z² = 3.841459): 10 / 13.841459 = 0.722467; high = 1.
    const wins = clusteredWinRate(Array.from({ length: 30 }, (_, i) => ({ cluster: `q${i % 10}`, score: 1 })));
    assert.equal(wins.standardError, 0);
    close(wins.interval.low, 10 / 13.841459);
    assert.equal(wins.interval.high, 1);
    assert.match(wins.intervalNote ?? '', /no spread/);
    // Every question split alike (one win, one loss): p̂ = 0.5 with no spread between questions; Wilson at 1/2 over
    // n = 150: half width z / (1 + z²/n) · √(1/(4n) + z²/(4n²)) = 1.959964 / 1.025610 · 0.041343 = 0.079007.
    const split = clusteredWinRate(Array.from({ length: 300 }, (_, i) => ({ cluster: `q${i >> 1}`, score: i % 2 })));
    close(split.interval.low, 0.5 - 0.079007, 1e-5);
    close(split.interval.high, 0.5 + 0.079007, 1e-5);
    // Any spread: the clustered interval, with no note.
    assert.equal(
      clusteredWinRate([...Array.from({ length: 9 }, (_, i) => ({ cluster: `q${i}`, score: 1 })), { cluster: 'q9', score: 0 }])
        .intervalNote,
      undefined,
    );
  });

  it('counts attempts: attempt k certifies only on its one-sided bound at α_k = 0.02·6/(π²k²) (issue 38 item 3)', () => {
    // α_1 = 0.12/π² = 0.0121585, α_3 = α_1/9 = 0.00135095, α_10 = α_1/100 = 0.000121585; Σ_k α_k = 0.02.
    close(attemptAlpha(1), 0.0121585, 1e-7);
    close(attemptAlpha(3), 0.00135095, 1e-8);
    close(attemptAlpha(10), 0.000121585, 1e-9);
    assert.throws(() => attemptAlpha(0), RangeError);
    // p̂ = 0.6, SE = 0.04, 150 questions (149 df); plain 95%: 0.6 − 1.976013·0.04 = 0.520959. Quantiles of t(149)
    // (mpmath): t(1 − α_1) = 2.2752522, t(1 − α_3) = 3.0508733, t(1 − α_10) = 3.7603657.
    const w = {
      judgments: 900,
      clusters: 150,
      winRate: 0.6,
      standardError: 0.04,
      degreesOfFreedom: 149,
      interval: { low: 0.6 - 1.976013 * 0.04, high: 0.6 + 1.976013 * 0.04 },
    };
    const first = attemptVerdict(w, 1);
    close(first.adjustedLowerBound, 0.6 - 2.2752522 * 0.04);
    assert.equal(first.verdict, 'certified');
    const third = attemptVerdict(w, 3);
    close(third.adjustedLowerBound, 0.6 - 3.0508733 * 0.04);
    // 0.4780 ≤ 0.5: not a certification, though the plain bound 0.521 would have been; provisional on the plain bound.
    assert.equal(third.verdict, 'provisional');
    close(attemptVerdict(w, 10).adjustedLowerBound, 0.6 - 3.7603657 * 0.04);
    assert.equal(attemptVerdict({ ...w, winRate: 0.45, interval: { low: 0.371, high: 0.529 } }, 1).verdict, 'not_certified');
    assert.equal(attemptVerdict(null, 1).verdict, 'not_certified');
  });

  it('simulation: at a true rate of 0.5 an owner certifies within 1, 3 and 10 attempts no more often than Σα_k allows (2,000 owners)', () => {
    // Σ_{k≤n} α_k by hand: n = 1: 0.0121585; n = 3: 0.0121585·(1 + 1/4 + 1/9) = 0.0165491; n = 10: 0.0121585 ·
    // 1.5497677 = 0.0188429. Each share may exceed its bound by sampling error: 3 SE of a share at the bound.
    const bounds = new Map([
      [1, 0.0121585],
      [3, 0.0165491],
      [10, 0.0188429],
    ]);
    const r = simulateAttemptSeries({ trueRate: 0.5, series: 2_000, attempts: [...bounds.keys()], seed: 38 });
    for (const [n, bound] of bounds) {
      const share = (r.certifiedWithin.get(n) ?? NaN) / r.series;
      assert.ok(share <= bound + 3 * Math.sqrt((bound * (1 - bound)) / r.series), `within ${n}: ${share} > ${bound}`);
    }
  });

  it('puts the verdict on the lower bound: certified above 0.50, provisional above 0.40, otherwise not', () => {
    assert.equal(verdictFor(0.5000001), 'certified');
    assert.equal(verdictFor(0.5), 'provisional');
    assert.equal(verdictFor(0.4000001), 'provisional');
    assert.equal(verdictFor(0.4), 'not_certified');
    assert.equal(verdictFor(0), 'not_certified');
  });

  it('Wilson intervals match the textbook values', () => {
    // 8 of 10 at 95%: centre (0.8 + 1.92/10)/(1 + 3.8415/10) = 0.71691, half 0.22664.
    const w = wilsonInterval(8, 10);
    close(w.low, 0.490162, 1e-5);
    close(w.high, 0.943318, 1e-5);
    const all = wilsonInterval(50, 50);
    close(all.high, 1);
    close(all.low, 0.928652, 1e-5);
    assert.deepEqual(wilsonInterval(0, 0), { low: 0, high: 1 });
  });

  it("Fleiss' kappa reproduces the worked example (10 subjects, 14 raters, κ ≈ 0.210)", () => {
    const table = [
      [0, 0, 0, 0, 14],
      [0, 2, 6, 4, 2],
      [0, 0, 3, 5, 6],
      [0, 3, 9, 2, 0],
      [2, 2, 8, 1, 1],
      [7, 7, 0, 0, 0],
      [3, 2, 6, 3, 0],
      [2, 5, 3, 2, 2],
      [6, 5, 2, 1, 0],
      [0, 2, 2, 3, 7],
    ];
    const subjects = table.map((row) => row.flatMap((n, category) => Array.from({ length: n }, () => `c${category}`)));
    close(fleissKappa(subjects) ?? NaN, 0.20993, 1e-4);
    assert.equal(fleissKappa([['win', 'win', 'win']]), null, 'one category only: chance agreement is already 1');
    assert.equal(fleissKappa([]), null);
    close(
      fleissKappa([
        ['win', 'win'],
        ['loss', 'loss'],
      ]) ?? NaN,
      1,
    );
  });

  it('counts verdicts that flip when only the order changed', () => {
    const c = positionConsistency([
      { first: 'win', second: 'win' },
      { first: 'win', second: 'loss' },
      { first: 'tie', second: 'tie' },
      { first: 'loss', second: 'tie' },
    ]);
    assert.deepEqual(c, { pairs: 4, flips: 2, flipRate: 0.5 });
    assert.deepEqual(positionConsistency([]), { pairs: 0, flips: 0, flipRate: 0 });
  });

  it('simulation: at a true rate of 0.5 a 150-question, 3-judge, 2-repeat run certifies at most 3.5% of the time (2,000 runs)', () => {
    const r = simulateCertifications({ trueRate: 0.5, runs: 2_000, seed: 1 });
    assert.ok(r.certifiedShare <= 0.035, `certified ${r.certifiedShare}`);
  });

  it('simulation: the 95% interval covers the true rate 93–97% of the time from 0.3 to 0.7 (2,000 runs each)', () => {
    for (const trueRate of [0.3, 0.4, 0.5, 0.6, 0.7]) {
      const r = simulateCertifications({ trueRate, runs: 2_000, seed: Math.round(trueRate * 100) });
      assert.ok(r.coverage >= 0.93 && r.coverage <= 0.97, `coverage ${r.coverage} at ${trueRate}`);
    }
  });

  it('simulation: a clearly better mode certifies and a clearly worse one does not', () => {
    assert.ok(simulateCertifications({ trueRate: 0.62, runs: 500, seed: 3 }).certifiedShare > 0.95);
    assert.equal(simulateCertifications({ trueRate: 0.3, runs: 500, seed: 4 }).certifiedShare, 0);
  });
});
