import assert from 'node:assert/strict';
import { equalCostSummary, majorityVote, MAX_SAMPLES, samplesAtEqualCost, type ArmRow } from '../../../domain/equal-cost';
import { answerKey } from '../../../domain/questions/check';

describe('domain: equal-cost arms (issue 39 item 2)', () => {
  it('k is the mode seats’ cost over one sample’s, rounded down, at least 2 and at most MAX_SAMPLES', () => {
    assert.equal(samplesAtEqualCost(9_000, 2_000), 4);
    assert.equal(samplesAtEqualCost(3_000, 2_000), 2, 'never fewer than two samples');
    assert.equal(samplesAtEqualCost(1_000_000, 1), MAX_SAMPLES);
    assert.equal(samplesAtEqualCost(5_000, 0), 2, 'a free sample (no recorded cost) still gives two');
  });

  it('reads answers as the checker compares them, phrased the ways models phrase them', () => {
    // GSM8K-style numbers: digits, grouping, words and units all name 1234.
    const numbers = [
      'Final answer: 1,234',
      'so the total is $1234.',
      'Final answer: **1234 apples**',
      'The answer is one thousand two hundred thirty-four',
    ];
    assert.deepEqual(new Set(numbers.map((r) => answerKey(r))), new Set(['number 1234']));
    assert.equal(answerKey('Final answer: 42 or 43'), undefined, 'a hedge is no answer');
    // ARC-style letters, with the option's text or without.
    const choices = ['dry palms', 'wet palms', 'palms covered with oil', 'palms covered with lotion'];
    const letters = ['Final answer: A', '(A) dry palms', 'The answer is A.', 'dry palms'];
    assert.deepEqual(
      letters.map((r) => answerKey(r, { answerKind: 'choice', choices })),
      ['A', 'A', 'A', 'A'],
    );
    assert.equal(answerKey('A or B', { answerKind: 'choice', choices }), undefined);
    assert.deepEqual(
      ['Yes, it does.', 'true', 'No.'].map((r) => answerKey(r, { answerKind: 'yes-no' })),
      ['yes', 'yes', 'no'],
    );
    // MATH: one value however it is written.
    assert.deepEqual(
      ['Final answer: $\\frac{1}{2}$', '\\boxed{0.5}', 'x = 2/4'].map((r) => answerKey(r, { answerKind: 'math' })),
      ['1/2', '1/2', '1/2'],
    );
  });

  it('the majority vote takes the most common answer, the earliest on a tie, and ignores unreadable samples unless all are', () => {
    assert.deepEqual(majorityVote(['Final answer: 7', 'Final answer: 8', 'seven', 'Final answer: 8.0', 'Final answer: 8'], {}), {
      index: 1,
      votes: 3,
    });
    assert.deepEqual(majorityVote(['Final answer: 7', 'Final answer: 8'], {}), { index: 0, votes: 1 });
    assert.deepEqual(majorityVote(['7 or 8', 'Final answer: 9'], {}), { index: 1, votes: 1 });
    // None readable: the first sample, no votes; the checker then marks it wrong, as it would any arm's.
    assert.deepEqual(majorityVote(['7 or 8', ''], {}), { index: 0, votes: 0 });
    assert.equal(majorityVote([], {}), null);
  });

  it('summarises each arm: accuracy with Wilson’s interval, mean cost, median latency, the paired difference by cluster', () => {
    // Four clusters of two questions. The mode is right on all 8; Self-MoA on the 4 even ones; the vote on 6.
    const rows: ArmRow[] = Array.from({ length: 8 }, (_, i) => ({
      questionId: `q${i}`,
      cluster: `c${Math.floor(i / 2)}`,
      modeCorrect: true,
      baselineCorrect: i < 2,
      costs: { modeMicros: 100, modeSeatsMicros: 60, baselineMicros: 20, modeLatencyMs: 10 + i, baselineLatencyMs: 4 },
      arms: {
        samples: 3,
        answered: 3,
        addedMicros: 50,
        selfMoa: { answer: 'x', correct: i % 2 === 0, costMicros: 70, latencyMs: 8 },
        majorityVote: { answer: 'x', correct: i < 6, costMicros: 60, latencyMs: 4, votes: 2 },
      },
    }));
    rows.push({ questionId: 'old', cluster: 'c9', modeCorrect: false, baselineCorrect: false });
    const summary = equalCostSummary(rows);
    assert.ok(summary);
    const by = Object.fromEntries(summary.map((a) => [a.arm, a]));
    assert.deepEqual(
      summary.map((a) => [a.arm, a.questions, a.accuracy, a.costPerQuestionMicros]),
      [
        ['mode', 8, 1, 100],
        ['baseline', 8, 0.25, 20],
        ['self_moa', 8, 0.5, 70],
        ['majority_vote', 8, 0.75, 60],
      ],
      'the row without arms (a run before them) is left out',
    );
    assert.equal(by.mode.latencyMsMedian, 14, 'median of 10…17 is 13.5, rounded');
    assert.equal(by.mode.modeMinusArm, null);
    // Self-MoA: every cluster has one right and one wrong, so each cluster's difference is the mean, 0.5: no spread.
    assert.equal(by.self_moa.modeMinusArm?.difference, 0.5);
    assert.equal(by.self_moa.modeMinusArm?.interval, null);
    // The vote: clusters c0–c2 differ by 0, c3 by 2 (of 8): D = 0.25; residuals e_g = (d_g − 2·0.25)/8 =
    // −1/16 three times and +3/16 once; SE² = 4/3 · (3/256 + 9/256) = 1/16, SE = 0.25, t(0.975, 3) = 3.182446.
    const vote = by.majority_vote.modeMinusArm;
    assert.equal(vote?.difference, 0.25);
    assert.ok(Math.abs((vote?.standardError ?? 0) - 0.25) < 1e-12);
    assert.ok(Math.abs((vote?.interval?.low ?? 0) - (0.25 - 3.182446 * 0.25)) < 1e-5);
    assert.equal(vote?.interval?.high, 1, 'clamped to a difference of proportions');
    // Wilson 95% for 6 of 8: centre (0.75 + 1.96²/16)/(1 + 1.96²/8), half-width 1.96·√(0.75·0.25/8 + 1.96²/256)/(1 + 1.96²/8).
    const z = 1.959964;
    const centre = (0.75 + (z * z) / 16) / (1 + (z * z) / 8);
    const half = (z * Math.sqrt((0.75 * 0.25) / 8 + (z * z) / 256)) / (1 + (z * z) / 8);
    assert.ok(Math.abs(by.majority_vote.accuracyInterval.low - (centre - half)) < 1e-5);
    assert.equal(equalCostSummary([{ questionId: 'old', cluster: 'c', modeCorrect: true, baselineCorrect: true }]), null);
  });
});
