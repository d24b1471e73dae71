import assert from 'node:assert/strict';
import {
  equalCostSamples,
  equalCostSummary,
  majorityVote,
  MAX_SAMPLES,
  questionSeats,
  sampleAnswers,
  samplesAtEqualCost,
  seatsVoteSummary,
  type ArmRow,
  type QuestionSeats,
  type SeatsVote,
} from '../../../domain/equal-cost';
import type { PanelResult, SeatPass, SeatRole } from '../../../domain/outcome';
import { answerKey } from '../../../domain/questions/check';

/** A panel's seats and passes, as questionSeats reads them: `passes` are [seat, round, text]. */
function panelOf(
  rounds: number,
  passes: [SeatRole, number, string][],
  answer: string,
  notAsked: SeatRole[] = [],
): Pick<PanelResult, 'seats' | 'passes' | 'rounds' | 'answer'> {
  const roles: SeatRole[] = ['seat1', 'seat2', 'seat3'];
  return {
    rounds,
    answer,
    seats: roles.map((role) => ({
      role,
      designed: `sim/${role}`,
      latest: null,
      failures: [],
      ...(notAsked.includes(role) && { notAsked: true }),
    })),
    passes: passes.map(([role, round, content]) => ({ role, round, content, modelUsed: `sim/${role}` }) as SeatPass),
  };
}

describe('domain: equal-cost arms (issue 39 item 2)', () => {
  it('k is a cost over one sample’s, rounded up (the arm never gets less money than the mode), at least 2 and at most MAX_SAMPLES', () => {
    assert.equal(samplesAtEqualCost(9_000, 2_000), 5, '4.5 samples’ money: five');
    assert.equal(samplesAtEqualCost(8_000, 2_000), 4, 'exactly four');
    assert.equal(samplesAtEqualCost(3_000, 2_000), 2, 'never fewer than two samples');
    assert.equal(samplesAtEqualCost(1_000_000, 1), MAX_SAMPLES);
    assert.equal(samplesAtEqualCost(5_000, 0), 2, 'a free sample (no recorded cost) still gives two');
  });

  it('k is at the mode’s whole cost per question (judge and synthesis in), the seats-only k beside it (issue 52 item 2)', () => {
    // Seats $0.006, judge and synthesis $0.005 more: 11,000 µ$ ÷ 2,000 = 5.5 → 6 samples; the seats alone 3.
    assert.deepEqual(equalCostSamples({ modeMicros: 11_000, modeSeatsMicros: 6_000, sampleMicros: 2_000 }), {
      samples: 6,
      samplesSeatsOnly: 3,
    });
    // Both within the bounds: a mode of 100 samples' cost is still 12; a seats' share under two samples is still 2.
    assert.deepEqual(equalCostSamples({ modeMicros: 200_000, modeSeatsMicros: 1_000, sampleMicros: 2_000 }), {
      samples: MAX_SAMPLES,
      samplesSeatsOnly: 2,
    });
    assert.deepEqual(equalCostSamples({ modeMicros: 9_000, modeSeatsMicros: 9_000, sampleMicros: 0 }), { samples: 2, samplesSeatsOnly: 2 });
  });

  it('records each sample’s answer as the vote reads it, and the checker on it; a failed sample is null', () => {
    const q = { answer: '8' };
    assert.deepEqual(sampleAnswers([{ text: 'Final answer: 8' }, null, { text: 'seven or eight' }, { text: 'it is 9' }], q), [
      { answer: 'number 8', correct: true },
      null,
      { answer: null, correct: false },
      { answer: 'number 9', correct: false },
    ]);
  });

  describe('the seats’ own answers and vote on a question (issue 52 item 1)', () => {
    it('reads each seat’s final-round pass by the question’s kind; a tie takes the first tied seat’s answer', () => {
      // Round 2: seat1 says 41, seat2 42; seat3 answered round 1 only, so it abstains from the final round's vote.
      const panel = panelOf(
        2,
        [
          ['seat1', 1, 'Final answer: 42'],
          ['seat2', 1, 'Final answer: 42'],
          ['seat3', 1, 'Final answer: 42'],
          ['seat1', 2, 'On reflection, 41.\nFinal answer: 41'],
          ['seat2', 2, 'Final answer: 42'],
        ],
        'The panel says: Final answer: 42',
      );
      const seats = questionSeats(panel, { answer: '42' });
      assert.equal(seats.answerKind, 'number', 'a generated question with a number for its reference reads numbers');
      assert.equal(seats.round, 2);
      assert.deepEqual(seats.seats, [
        { role: 'seat1', engineId: 'sim/seat1', answer: 'number 41', correct: false },
        { role: 'seat2', engineId: 'sim/seat2', answer: 'number 42', correct: true },
        { role: 'seat3', engineId: null, answer: null, correct: false },
      ]);
      assert.deepEqual(seats.vote, {
        answer: 'number 41',
        votes: 1,
        role: 'seat1',
        correct: false,
        decidedBy: 'tie_first',
      } satisfies SeatsVote);
      assert.equal(seats.modeAnswer, 'number 42');
    });

    it('a plurality of a choice question’s letters, the option’s text read as its letter; a seat not asked abstains', () => {
      const q = { answer: 'B', answerKind: 'choice' as const, choices: ['red', 'blue', 'green'] };
      const seats = questionSeats(
        panelOf(
          1,
          [
            ['seat1', 1, 'Final answer: C'],
            ['seat2', 1, 'I think it is blue.\nFinal answer: blue'],
            ['seat3', 1, 'Final answer: (B)'],
          ],
          'Final answer: C',
        ),
        q,
      );
      assert.equal(seats.answerKind, 'choice');
      assert.deepEqual(
        seats.seats.map((s) => [s.answer, s.correct]),
        [
          ['C', false],
          ['B', true],
          ['B', true],
        ],
      );
      assert.deepEqual(seats.vote, { answer: 'B', votes: 2, role: 'seat2', correct: true, decidedBy: 'plurality' });
      assert.equal(seats.modeAnswer, 'C', 'the returned answer threw the vote away');

      const early = questionSeats(
        panelOf(
          1,
          [
            ['seat1', 1, 'Final answer: yes'],
            ['seat2', 1, 'Yes.'],
          ],
          'Final answer: yes',
          ['seat3'],
        ),
        { answer: 'yes', answerKind: 'yes-no' },
      );
      assert.equal(early.answerKind, 'yes_no');
      assert.deepEqual(early.seats[2], { role: 'seat3', engineId: null, answer: null, correct: false, notAsked: true });
      assert.deepEqual([early.vote.answer, early.vote.votes, early.vote.decidedBy], ['yes', 2, 'plurality']);
    });

    it('with no readable answer the first answering seat stands with no votes; with no answer there is no vote', () => {
      const unread = questionSeats(
        panelOf(
          1,
          [
            ['seat2', 1, 'I am not sure.'],
            ['seat3', 1, 'Somewhere between 3 and 5'],
          ],
          '',
        ),
        { answer: '4' },
      );
      assert.deepEqual(unread.vote, { answer: null, votes: 0, role: 'seat2', correct: false, decidedBy: 'none_readable' });
      assert.equal(unread.modeAnswer, null);
      const none = questionSeats(panelOf(1, [], ''), { answer: '4' });
      assert.deepEqual(none.vote, { answer: null, votes: 0, role: null, correct: false, decidedBy: 'no_answer' });
      assert.ok(none.seats.every((s) => s.engineId === null && s.answer === null));
    });

    it('summarises the returned answer against the vote, paired by question, clustered as the arms are', () => {
      // Four clusters of two questions. The vote is right on all 8; the mode on both of c0 and c1, one of c2, none
      // of c3: 5 of 8.
      const modeRight = [true, true, true, true, true, false, false, false];
      const rows = modeRight.map((modeCorrect, i) => ({
        questionId: `q${i}`,
        cluster: `c${Math.floor(i / 2)}`,
        modeCorrect,
        seats: {
          answerKind: 'number',
          round: 1,
          seats: [],
          vote: {
            answer: 'number 1',
            votes: 2,
            role: 'seat1',
            correct: true,
            decidedBy: i === 0 ? 'tie_first' : i === 1 ? 'none_readable' : 'plurality',
          },
          modeAnswer: null,
        } satisfies QuestionSeats,
      }));
      const before = { questionId: 'old', cluster: 'c9', modeCorrect: true };
      const s = seatsVoteSummary([...rows, before]);
      assert.ok(s);
      assert.deepEqual(
        [s.questions, s.mode.correct, s.mode.accuracy, s.seatsVote.correct, s.seatsVote.accuracy],
        [8, 5, 0.625, 8, 1],
        'the row without seats (written before them) is left out',
      );
      assert.deepEqual([s.lost, s.gained, s.ties, s.unreadable], [3, 0, 1, 1]);
      // D = 0.625 − 1 = −0.375. Residuals e_g = Σ(y_mode − 0.625)/8 (the vote's are all 0): c0, c1 +0.75/8, c2
      // −0.25/8, c3 −1.25/8; Σe² = (0.5625·2 + 0.0625 + 1.5625)/64 = 11/256; SE² = 4/3 · 11/256 = 11/192.
      const d = s.modeMinusVote;
      assert.equal(d.pairs, 8);
      assert.equal(d.difference, -0.375);
      assert.ok(Math.abs(d.standardError - Math.sqrt(11 / 192)) < 1e-12);
      assert.equal(d.degreesOfFreedom, 3);
      assert.equal(d.interval?.low, -1, 'clamped to a difference of proportions');
      assert.ok(Math.abs((d.interval?.high ?? 0) - (-0.375 + 3.182446 * Math.sqrt(11 / 192))) < 1e-5);
      // Wilson 95% for 5 of 8.
      const z = 1.959964;
      const centre = (0.625 + (z * z) / 16) / (1 + (z * z) / 8);
      const half = (z * Math.sqrt((0.625 * 0.375) / 8 + (z * z) / 256)) / (1 + (z * z) / 8);
      assert.ok(Math.abs(s.mode.accuracyInterval.low - (centre - half)) < 1e-5);
      assert.equal(seatsVoteSummary([before]), null, 'a run from before issue 52');
      const one = seatsVoteSummary(rows.slice(0, 2));
      assert.equal(one?.modeMinusVote.interval, null, 'one cluster gives no interval');
      assert.match(one?.modeMinusVote.noInterval ?? '', /Fewer than two clusters/);
    });
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
