import assert from 'node:assert/strict';
import {
  advise,
  adviceLines,
  bucketAdvice,
  certificationOutlook,
  halfWidthAt,
  MIN_BUCKET_QUESTIONS,
  questionsForHalfWidth,
  receiptHealth,
  type ReceiptFacts,
} from '../../../domain/advisor';
import { BUCKET_NAMES } from '../../../domain/form';
import type { Bucket } from '../../../domain/questions/types';
import type { Verdict } from '../../../domain/run-judging';
import { summarizeRun } from '../../../domain/run-summary';
import type { QuestionResult } from '../../../domain/runs';

/** Form B's words for the buckets, as its answers use them. */
const NAMES = BUCKET_NAMES.B;

const close = (actual: number | null, expected: number, tolerance = 1e-6): void =>
  assert.ok(actual !== null && Math.abs(actual - expected) <= tolerance, `${actual} is not within ${tolerance} of ${expected}`);

/** A judged question: one judgment per verdict. */
function question(id: string, bucket: Bucket, verdicts: Verdict[]): QuestionResult {
  return {
    questionId: id,
    bucket,
    tier: 'plus',
    cluster: `${bucket}-t`,
    reference: '1',
    modeAnswer: '1',
    baselineAnswer: '1',
    baselineEngine: 'sim/plus-a',
    modeCorrect: true,
    baselineCorrect: true,
    judgments: verdicts.map((verdict, i) => ({ slot: 'judge_a', engineId: 'sim/judge', repeat: i + 1, order: [0, 1], verdict })),
    recusals: [],
    costMicros: 0,
    latencyMs: 0,
  };
}

/** `wins` questions won and `losses` lost (one judgment each) in `bucket`. */
function bucketOf(bucket: Bucket, wins: number, losses: number): QuestionResult[] {
  return [
    ...Array.from({ length: wins }, (_, i) => question(`${bucket}-w${i}`, bucket, ['win'])),
    ...Array.from({ length: losses }, (_, i) => question(`${bucket}-l${i}`, bucket, ['loss'])),
  ];
}

describe('domain: the mode advisor', () => {
  it('finds the fewest questions for a half-width on the t distribution, not the normal', () => {
    // Variance 0.25 (the widest): the normal answer is ⌈1.96²·0.25/0.01⌉ = 97; t(97) makes 98 too wide, so 99.
    assert.equal(questionsForHalfWidth(0.25, 0.1), 99);
    assert.ok(halfWidthAt(0.25, 98) > 0.1);
    assert.ok(halfWidthAt(0.25, 99) <= 0.1);
    close(halfWidthAt(0.25, 99), 1.984467 * Math.sqrt(0.25 / 99), 1e-5);
  });

  it('a thin bucket says how many more questions, from its observed spread (hand-computed)', () => {
    // Four questions scoring 1, 1, 0, 0.5: p̂ = 0.625; deviations .375, .375, −.625, −.125; Σ² = 0.6875; s² = 0.6875/3.
    // At s² = 0.229167, t(90)·√(s²/91) = 0.099697 ≤ 0.1 < t(89)·√(s²/90) = 0.100265, so 91 questions: 87 more.
    const results = [
      question('a', 'light', ['win']),
      question('b', 'light', ['win']),
      question('c', 'light', ['loss']),
      question('d', 'light', ['tie']),
    ];
    const b = bucketAdvice('light', summarizeRun('test', results).perBucket.light);
    assert.equal(b.questions, 4);
    close(b.winRate, 0.625);
    close(b.variance, 0.6875 / 3);
    assert.equal(b.varianceObserved, true);
    assert.equal(b.thin, true);
    assert.equal(b.moreQuestions, 87);
    close(b.projectedHalfWidth, 0.099697, 1e-5);
  });

  it('a bucket with no spread yet assumes the widest, and asks at least the minimum', () => {
    const empty = bucketAdvice('hard', summarizeRun('test', []).perBucket.hard);
    assert.equal(empty.winRate, null);
    assert.equal(empty.varianceObserved, false);
    assert.equal(empty.moreQuestions, 99);
    const allWins = bucketAdvice('medium', summarizeRun('test', bucketOf('medium', 3, 0)).perBucket.medium);
    assert.equal(allWins.varianceObserved, false, 'three wins show no spread; it is not taken as zero');
    assert.equal(allWins.thin, true);
    assert.ok(allWins.moreQuestions >= MIN_BUCKET_QUESTIONS - 3);
  });

  it('projects a certification from the buckets: their mean rate, their spread plus how far apart they lie (hand-computed)', () => {
    // Each bucket 45 of 50 won: p = 0.9, s² = 0.9·0.1·50/49 = 0.0918367; rates equal, so nothing between buckets.
    // L = 0.9 − t(149)·√(0.0918367/150) = 0.9 − 1.976013·0.0247436 = 0.851107.
    const results = [...bucketOf('light', 45, 5), ...bucketOf('medium', 45, 5), ...bucketOf('hard', 45, 5)];
    const summary = summarizeRun('test', results);
    const buckets = (['light', 'medium', 'hard'] as const).map((b) => bucketAdvice(b, summary.perBucket[b]));
    const outlook = certificationOutlook(buckets, NAMES);
    close(outlook.projectedLowerBound, 0.851107, 1e-5);
    assert.equal(outlook.projectedVerdict, 'certified');
    assert.equal(outlook.ready, true);
    const advice = advise(summary, [], NAMES);
    assert.equal(advice.recommendation.kind, 'certification');
    assert.ok(adviceLines(advice, NAMES).some((l) => l.includes('0.851')));
  });

  it('a measured mode that would not certify gets no run recommended, and says why', () => {
    // 50 of 100 won per bucket: s² = 0.25·100/99; half-width t(99)·√(s²/100) = 0.0997 (not thin);
    // L = 0.5 − 1.976013·√(0.252525/150) = 0.418924: provisional.
    const results = [...bucketOf('light', 50, 50), ...bucketOf('medium', 50, 50), ...bucketOf('hard', 50, 50)];
    const advice = advise(summarizeRun('test', results), [], NAMES);
    assert.ok(advice.buckets.every((b) => !b.thin));
    close(advice.certification.projectedLowerBound, 0.418924, 1e-5);
    assert.equal(advice.certification.projectedVerdict, 'provisional');
    assert.equal(advice.recommendation.kind, 'none');
    assert.match(advice.recommendation.reason, /0\.419.*provisional/);
  });

  it('recommends a test run of exactly the thin buckets’ shortfall', () => {
    const results = [...bucketOf('light', 45, 5), ...bucketOf('medium', 45, 5), ...bucketOf('hard', 2, 1)];
    const advice = advise(summarizeRun('test', results), [], NAMES);
    const hard = advice.buckets.find((b) => b.bucket === 'hard');
    assert.equal(advice.recommendation.kind, 'test_run');
    assert.deepEqual(advice.recommendation.kind === 'test_run' && advice.recommendation.counts, {
      light: 0,
      medium: 0,
      hard: hard?.moreQuestions,
    });
    assert.ok(advice.certification.reasons.some((r) => r.includes('only 3 judged hard questions')));
    assert.ok(adviceLines(advice, NAMES).some((l) => l.startsWith('hard: 3 questions') && l.includes('thin')));
    assert.match(advice.recommendation.reason, /^a test run of \d+ hard questions/);
  });

  it('reads fallbacks, cut-offs, disagreement and cost against the quote from receipts', () => {
    const facts: ReceiptFacts[] = [
      { fallback: true, truncated: false, converged: true, billedMicros: 1_200, quotedMicros: 1_000 },
      { fallback: false, truncated: true, converged: false, billedMicros: 900, quotedMicros: 1_000 },
      { fallback: false, truncated: false, converged: null, billedMicros: 300, quotedMicros: null },
      { fallback: false, truncated: false, converged: false, billedMicros: 1_500, quotedMicros: 1_000 },
    ];
    const h = receiptHealth(facts);
    assert.equal(h.calls, 4);
    close(h.fallbackRate, 0.25);
    close(h.truncationRate, 0.25);
    assert.equal(h.judgedCalls, 3);
    close(h.disagreementRate, 2 / 3);
    assert.equal(h.pricedCalls, 3);
    close(h.costOverQuote, 3_600 / 3_000);
    const lines = adviceLines(advise(summarizeRun('test', []), facts, NAMES), NAMES).join('\n');
    assert.match(lines, /fallback 25\.0%, truncated 25\.0%, seats split 66\.7% of 3 judged, billed 1\.200× the quote/);
    assert.match(lines, /raise seat_max_output_tokens/);
    assert.equal(receiptHealth([]).fallbackRate, null);
  });

  describe('which aggregation wins on the mode’s own runs (issue 52 item 4)', () => {
    /**
     * Ten clusters of two questions (every one judged a win). One answer is right on all 20; the other misses one
     * question in clusters 0–4 and both in 5–9: 5 of 20 right.
     */
    function seated(voteWins: boolean, votes = true): QuestionResult[] {
      return Array.from({ length: 20 }, (_, i) => {
        const cluster = Math.floor(i / 2);
        const weakRight = cluster < 5 && i % 2 === 0;
        const [modeCorrect, voteCorrect] = voteWins ? [weakRight, true] : [true, weakRight];
        return {
          ...question(`q${i}`, 'medium', ['win']),
          cluster: `t${cluster}`,
          modeCorrect,
          ...(votes && {
            seats: {
              answerKind: 'number' as const,
              round: 1,
              seats: [],
              vote: { answer: 'number 1', votes: 2, role: 'seat1', correct: voteCorrect, decidedBy: 'plurality' as const },
              modeAnswer: null,
            },
          }),
        };
      });
    }
    // Vote minus mode D = 1 − 0.25 = 0.75. The weaker answer's residuals: (1 − 0.25)/20 + (0 − 0.25)/20 = +0.025 in
    // clusters 0–4 and −0.5/20 = −0.025 in 5–9; Σe² = 10 · 0.000625; SE² = 10/9 · 0.00625 = 1/144: SE = 1/12.
    // t(0.975, 9) = 2.262157, so the interval is 0.75 ± 0.188513.
    const HALF = 2.262157 / 12;

    it('advises aggregation: {method: "vote"} when the seats’ vote beats the answer returned, by how much and its interval', () => {
      const advice = advise(summarizeRun('test', seated(true)), [], NAMES);
      const a = advice.aggregation;
      assert.ok(a);
      assert.deepEqual([a.questions, a.modeAccuracy, a.voteAccuracy, a.lost, a.gained], [20, 0.25, 1, 15, 0]);
      close(a.voteMinusMode, 0.75);
      close(a.interval?.low ?? null, 0.75 - HALF, 1e-5);
      close(a.interval?.high ?? null, 0.75 + HALF, 1e-5);
      assert.equal(a.winner, 'vote');
      assert.deepEqual(a.set, { aggregation: { method: 'vote' } });
      const line = adviceLines(advice, NAMES).find((l) => l.startsWith('Aggregation:'));
      assert.match(line ?? '', /vote minus returned \+75\.0 points \[\+56\.1, \+93\.9\] \(95%\)/);
      assert.match(line ?? '', /turned 15 right votes wrong and 0 wrong votes right/);
      assert.match(line ?? '', /Set aggregation: \{method: "vote"\}/);
      // A mode that votes already is told so, not to set what it has.
      const voting = advise(summarizeRun('test', seated(true)), [], NAMES, { aggregationMethod: 'vote' });
      assert.deepEqual([voting.aggregation?.winner, voting.aggregation?.set], ['vote', null]);
      assert.ok(adviceLines(voting, NAMES).some((l) => l.includes('The mode votes already')));
    });

    it('keeps the mode’s own aggregation when it beats the vote; too close or no seats recorded says so', () => {
      const kept = advise(summarizeRun('test', seated(false)), [], NAMES).aggregation;
      assert.deepEqual([kept?.winner, kept?.set], ['mode', null]);
      close(kept?.voteMinusMode ?? null, -0.75);
      close(kept?.interval?.high ?? null, -0.75 + HALF, 1e-5);
      // The same answers both ways: no difference, and no spread to give an interval.
      const even = seated(true).map((r) => ({ ...r, modeCorrect: true }));
      const tied = advise(summarizeRun('test', even), [], NAMES);
      assert.deepEqual([tied.aggregation?.winner, tied.aggregation?.interval, tied.aggregation?.set], ['unclear', null, null]);
      assert.ok(adviceLines(tied, NAMES).some((l) => l.includes('Too close to call')));
      // Runs before issue 52 recorded no seats: no aggregation advice, and no line for it.
      const before = advise(summarizeRun('test', seated(true, false)), [], NAMES);
      assert.equal(before.aggregation, null);
      assert.ok(!adviceLines(before, NAMES).some((l) => l.startsWith('Aggregation:')));
    });
  });
});
