import assert from 'node:assert/strict';
import { clusteredWinRate, pairedWinRateDifference, type PairedScore } from '../../../domain/statistics';

const close = (actual: number, expected: number, tolerance = 1e-6): void =>
  assert.ok(Math.abs(actual - expected) <= tolerance, `${actual} is not within ${tolerance} of ${expected}`);

/** Scores as [question, score] with the question as its own cluster, as a run's own interval has it. */
const byQuestion = (rows: [string, number][]): PairedScore[] => rows.map(([question, score]) => ({ question, cluster: question, score }));

describe('domain: paired difference of win rates', () => {
  it('with one judgment per question in each run, it is the paired t interval of the per-question differences', () => {
    // Differences now − before per question: 1, 0.5, 0, 0.5 → mean 0.5; deviations 0.5, 0, −0.5, 0, so
    // s² = 0.5/3 = 0.1666667 and SE = √(s²/4) = 0.2041241. t(0.975, 3) = 3.182446 (tables) → half width 0.6496141.
    const now = byQuestion([
      ['q1', 1],
      ['q2', 1],
      ['q3', 0.5],
      ['q4', 0.5],
    ]);
    const before = byQuestion([
      ['q1', 0],
      ['q2', 0.5],
      ['q3', 0.5],
      ['q4', 0],
    ]);
    const d = pairedWinRateDifference(now, before);
    assert.equal(d.pairs, 4);
    assert.equal(d.clusters, 4);
    assert.equal(d.degreesOfFreedom, 3);
    close(d.difference, 0.5);
    close(d.standardError, 0.2041241);
    close(d.interval?.low ?? NaN, 0.5 - 0.6496141);
    close(d.interval?.high ?? NaN, 1, 0); // 0.5 + 0.6496 is past 1: a difference of win rates lies in [−1, 1]
  });

  it('pairs by question, leaves out questions of one run only, weights by judgments and clusters as asked (hand-computed)', () => {
    // Paired questions a, b, c (d is in `now` only, e in `before` only); a and b share the cluster X, c is Y.
    // now: a [1, 1], b [0], c [0.5, 0]      → N = 5, Σ = 2.5, p̂ = 0.5
    // before: a [0], b [0, 1], c [0]        → N = 4, Σ = 1,   p̂ = 0.25          D = 0.25
    // residuals of now (y − 0.5)/5: a 0.1, 0.1; b −0.1; c 0, −0.1 → X: 0.1, Y: −0.1
    // residuals of before (y − 0.25)/4: a −0.0625; b −0.0625, 0.1875; c −0.0625 → X: 0.0625, Y: −0.0625
    // e_X = 0.1 − 0.0625 = 0.0375, e_Y = −0.1 + 0.0625 = −0.0375; SE² = 2 · (2 · 0.0375²) = 0.005625, SE = 0.0750000
    // t(0.975, 1) = 12.706205 (tables) → half width 0.9529654: [−0.7029654, 1] (clamped above).
    const now: PairedScore[] = [
      { question: 'a', cluster: 'X', score: 1 },
      { question: 'a', cluster: 'X', score: 1 },
      { question: 'b', cluster: 'X', score: 0 },
      { question: 'c', cluster: 'Y', score: 0.5 },
      { question: 'c', cluster: 'Y', score: 0 },
      { question: 'd', cluster: 'Y', score: 1 },
    ];
    const before: PairedScore[] = [
      { question: 'a', cluster: 'X', score: 0 },
      { question: 'b', cluster: 'X', score: 0 },
      { question: 'b', cluster: 'X', score: 1 },
      { question: 'c', cluster: 'Y', score: 0 },
      { question: 'e', cluster: 'X', score: 1 },
    ];
    const d = pairedWinRateDifference(now, before);
    assert.equal(d.pairs, 3);
    assert.equal(d.clusters, 2);
    assert.equal(d.degreesOfFreedom, 1);
    close(d.difference, 0.25);
    close(d.standardError, 0.075);
    close(d.interval?.low ?? NaN, 0.25 - 0.9529654);
    close(d.interval?.high ?? NaN, 1, 0);
  });

  it('is narrower than the independent difference when both versions find the same questions hard', () => {
    // Each question's score moves both runs alike (plus a small change): the shared part cancels in the pairs.
    const questions = Array.from({ length: 40 }, (_, i) => `q${i}`);
    const hard = (i: number): number => (i % 3 === 0 ? 0 : i % 3 === 1 ? 0.5 : 1);
    const before = byQuestion(questions.map((q, i) => [q, hard(i)]));
    const now = byQuestion(questions.map((q, i) => [q, i % 5 === 0 ? Math.min(1, hard(i) + 0.5) : hard(i)]));
    const d = pairedWinRateDifference(now, before);
    const independent = Math.hypot(clusteredWinRate(now).standardError, clusteredWinRate(before).standardError);
    assert.ok(d.standardError < independent / 3, `paired SE ${d.standardError} vs independent ${independent}`);
    assert.ok((d.interval?.low ?? 0) > 0, 'the improvement is seen on the pairs');
  });

  it('has no interval with fewer than two clusters', () => {
    const d = pairedWinRateDifference(byQuestion([['q1', 1]]), byQuestion([['q1', 0]]));
    assert.deepEqual({ pairs: d.pairs, difference: d.difference, interval: d.interval }, { pairs: 1, difference: 1, interval: null });
    assert.match(d.noInterval ?? '', /Fewer than two questions/);
  });

  it('has no interval when every question differs by the same amount (issue 38 item 6: no spread is no knowledge)', () => {
    // Nine questions, each 1 now and 0.5 before: every difference is 0.5, so D = 0.5 and the residuals are all 0.
    const questions = Array.from({ length: 9 }, (_, i) => `q${i}`);
    const d = pairedWinRateDifference(byQuestion(questions.map((q) => [q, 1])), byQuestion(questions.map((q) => [q, 0.5])));
    assert.equal(d.pairs, 9);
    close(d.difference, 0.5);
    assert.equal(d.interval, null);
    assert.match(d.noInterval ?? '', /same amount/);
    // One question off by a quarter gives spread, and an interval of positive width around the difference.
    const spread = pairedWinRateDifference(
      byQuestion(questions.map((q, i) => [q, i === 0 ? 0.75 : 1])),
      byQuestion(questions.map((q) => [q, 0.5])),
    );
    assert.equal(spread.noInterval, null);
    assert.ok(spread.interval && spread.interval.high - spread.interval.low > 0, JSON.stringify(spread));
  });
});
