import assert from 'node:assert/strict';
import { SYSTEM_MODES, simDemoModes } from '../../../domain/modes';
import { lineUpRun, type RunShape } from '../../../domain/run-lineup';
import { endStateOf, runEvidence, summarizeRun } from '../../../domain/run-summary';
import { JUDGE_SLOTS } from '../../../domain/run-judging';
import type { QuestionResult } from '../../../domain/runs';
import { createEngines } from '../../../engines';
import { runSeatingContext } from '../../../engines/seating-context';
import { settingsOf } from '../../harness/settings';

const engines = createEngines({ ...settingsOf({}) });
const [strong, weak] = simDemoModes({ idPrefix: 'x', company: 'X' });
const panel = SYSTEM_MODES[0];
const shape = (over: Partial<RunShape> = {}): RunShape => ({
  tiers: ['plus'],
  punchUp: false,
  judges: [...JUDGE_SLOTS],
  protocol: 'pairwise',
  ...over,
});
const live = runSeatingContext(engines, new Set(), false);
const test = runSeatingContext(engines, new Set(), true);

describe('domain: who answers and who judges a run', () => {
  it('the baseline is the strongest seat engine; a judge of its maker recuses itself for a reserve', () => {
    const lineup = lineUpRun(weak.config, shape(), live);
    assert.ok(lineup.ok);
    const [tier] = lineup.tiers;
    assert.equal(tier.baseline.engineId, 'sim/beta-pro');
    // Each simulated engine stands for its own maker: only the baseline engine itself must not judge.
    const recused = tier.judges.filter((j) => j.recusal);
    assert.deepEqual(
      recused.map((j) => [j.recusal?.engineId, j.engineId]),
      [['sim/beta-pro', j0(tier.judges)]],
    );
    assert.ok(tier.judges.every((j) => j.engineId !== 'sim/beta-pro'));
    assert.equal(new Set(tier.judges.map((j) => j.engineId)).size, 3);
  });

  it('punch_up takes the next tier’s strongest engine as the baseline', () => {
    const lineup = lineUpRun(strong.config, shape({ punchUp: true }), live);
    assert.ok(lineup.ok);
    assert.equal(lineup.tiers[0].baseline.engineId, 'sim/beta-pro');
    const own = lineUpRun(strong.config, shape(), live);
    assert.ok(own.ok);
    assert.equal(own.tiers[0].baseline.engineId, 'sim/beta-plus', 'the dearest plus seat');
  });

  it('plurality also recuses judges of any seat’s maker', () => {
    const lineup = lineUpRun(strong.config, shape({ protocol: 'plurality', tiers: ['pro'] }), live);
    assert.ok(lineup.ok);
    const seats = new Set(lineup.tiers[0].plan.seats.map((s) => s.chain[0].engineId));
    assert.ok(lineup.tiers[0].judges.every((j) => !seats.has(j.engineId)));
  });

  it('a live run of real engines with no credentials is refused, naming what is missing; a test key runs it on sim', () => {
    const refused = lineUpRun(panel.config, shape(), live);
    assert.equal(refused.ok, false);
    if (refused.ok) return;
    assert.ok(refused.missing.some((m) => m.startsWith('judges: 3 judges')));
    assert.ok(refused.missing.includes('openai/gpt-4.1: no credentials configured'));
    const simulated = lineUpRun(panel.config, shape(), test);
    assert.ok(simulated.ok);
    assert.ok(simulated.tiers[0].plan.seats.every((s) => s.chain[0].engineId.startsWith('sim/')));
    assert.ok(simulated.tiers[0].baseline.engineId.startsWith('sim/'));
  });
});

function j0(judges: { slot: string; engineId: string }[]): string {
  return judges.find((j) => j.slot === 'judge_a')?.engineId ?? '';
}

function result(
  id: string,
  bucket: QuestionResult['bucket'],
  verdicts: [string, number, QuestionResult['judgments'][number]['verdict']][],
  correct: [boolean, boolean],
): QuestionResult {
  return {
    questionId: id,
    bucket,
    tier: 'plus',
    cluster: `t-${bucket}`,
    reference: '1',
    modeAnswer: '',
    baselineAnswer: '',
    baselineEngine: 'sim/beta-plus',
    modeCorrect: correct[0],
    baselineCorrect: correct[1],
    judgments: verdicts.map(([slot, repeat, verdict]) => ({
      slot: slot as 'judge_a',
      engineId: `e-${slot}`,
      repeat,
      order: [0, 1],
      verdict,
    })),
    recusals: [{ slot: 'judge_a', engineId: 'sim/beta-plus', replacedBy: 'sim/alpha-plus' }],
    costMicros: 100,
    latencyMs: 10,
  };
}

describe('domain: a run’s summary from its question rows', () => {
  const rows = [
    result(
      'q1',
      'light',
      [
        ['judge_a', 1, 'win'],
        ['judge_a', 2, 'win'],
        ['judge_b', 1, 'tie'],
        ['judge_b', 2, 'win'],
      ],
      [true, false],
    ),
    result(
      'q2',
      'light',
      [
        ['judge_a', 1, 'loss'],
        ['judge_a', 2, 'loss'],
        ['judge_b', 1, 'loss'],
        ['judge_b', 2, null],
      ],
      [false, true],
    ),
  ];

  it('scores, clusters, accuracy, position flips, unread verdicts and recusals (hand-computed)', () => {
    const plan = { counts: { light: 2, medium: 0, hard: 0 }, judges: ['judge_a', 'judge_b'] as const, repeats: 2 };
    const s = summarizeRun('certification', rows, plan);
    // Scores 1, 1, 0.5, 1 | 0, 0, 0: 3.5 / 7 = 0.5.
    assert.equal(s.overall.judgments, 7);
    assert.equal(s.overall.winRate?.winRate, 0.5);
    assert.equal(s.overall.winRate?.clusters, 2);
    assert.equal(s.perBucket.light.questions, 2);
    assert.equal(s.perBucket.hard.winRate, null);
    assert.equal(s.overall.mode.correct, 1);
    assert.equal(s.overall.baseline.correct, 1);
    // Mirrored pairs: a(w,w) b(t,w) a(l,l); b's second verdict was unreadable. One flip in three.
    assert.deepEqual(
      { pairs: s.positionConsistency.pairs, flips: s.positionConsistency.flips, flagged: s.positionConsistency.flagged },
      { pairs: 3, flips: 1, flagged: true },
    );
    assert.equal(s.unreadVerdicts, 1);
    assert.deepEqual(s.recusals, [{ slot: 'judge_a', engineId: 'sim/beta-plus', replacedBy: 'sim/alpha-plus', questions: 2 }]);
    assert.equal(s.costMicros, 200);
    assert.equal(s.templates, 1);
    // 7 of 8 planned judgments read (87.5%, short of 90%): no verdict. Read in full, two questions leave a wide
    // interval: not certified on a 0.5 point estimate.
    assert.deepEqual([s.coverage?.judgments?.readable, s.coverage?.judgments?.planned, s.coverage?.met], [7, 8, false]);
    assert.equal(s.verdict, null);
    assert.equal(summarizeRun('certification', rows, { ...plan, judges: ['judge_a'] }).verdict, 'not_certified');
    assert.equal(summarizeRun('test', rows).verdict, null);
  });

  it('grounds the estimate: helps above one half, hurts below, unknown across it', () => {
    const many = (verdict: 'win' | 'loss' | 'tie', n: number) =>
      Array.from({ length: n }, (_, i) =>
        result(
          `q${i}`,
          'medium',
          [
            ['judge_a', 1, verdict],
            ['judge_b', 1, i % 4 === 0 ? 'tie' : verdict],
          ],
          [true, true],
        ),
      );
    // Beating one call of the strongest engine is not enough (issue 39 item 2): without an equal-cost arm, unknown.
    const unarmed = runEvidence(summarizeRun('test', many('win', 30)), 'medium', 'r1');
    assert.deepEqual([unarmed?.verdict, /no run measured it against the same money/.test(unarmed?.reason ?? '')], ['unknown', true]);
    // Each question's arms: right on every fifth question (the mode is right on all), or right whenever the mode is.
    const armed = (rightWhen: (i: number) => boolean): QuestionResult[] =>
      many('win', 30).map((r, i) => {
        const answer = { answer: 'Final answer: 1', correct: rightWhen(i), costMicros: 10, latencyMs: 5 };
        return {
          ...r,
          // Ten clusters of three questions: the arms' paired interval needs more than one.
          cluster: `t${i % 10}`,
          costs: { modeMicros: 30, modeSeatsMicros: 20, baselineMicros: 5, modeLatencyMs: 9, baselineLatencyMs: 3 },
          arms: { samples: 4, answered: 4, addedMicros: 20, selfMoa: answer, majorityVote: { ...answer, votes: 3 } },
        };
      });
    assert.equal(
      runEvidence(
        summarizeRun(
          'test',
          armed((i) => i % 5 === 0),
        ),
        'medium',
        'r1',
      )?.verdict,
      'likely_helps',
    );
    const matched = runEvidence(
      summarizeRun(
        'test',
        armed(() => true),
      ),
      'medium',
      'r1',
    );
    assert.deepEqual([matched?.verdict, /not clearly the same money/.test(matched?.reason ?? '')], ['unknown', true]);
    // Both arms must be beaten: a Self-MoA whose aggregation never answered is not beaten, however clearly the vote is.
    const oneArm = armed((i) => i % 5 === 0).map((r) => ({ ...r, arms: r.arms && { ...r.arms, selfMoa: null } }));
    const halfMeasured = runEvidence(summarizeRun('test', oneArm), 'medium', 'r1');
    assert.deepEqual([halfMeasured?.verdict, /not clearly the same money/.test(halfMeasured?.reason ?? '')], ['unknown', true]);
    assert.equal(runEvidence(summarizeRun('test', many('loss', 30)), 'medium', 'r1')?.verdict, 'likely_hurts');
    const mixed = summarizeRun('test', [...many('win', 10), ...many('loss', 10).map((r, i) => ({ ...r, questionId: `l${i}` }))]);
    const unknown = runEvidence(mixed, 'medium', 'r1');
    assert.equal(unknown?.verdict, 'unknown');
    assert.equal(unknown?.basis, 'test_runs');
    assert.match(
      unknown?.evidence ?? '',
      /^run r1, medium questions: n=20 \(40 judgments\), win rate 0\.\d{3} vs the baseline, 95% interval \[/,
    );
    assert.equal(runEvidence(mixed, 'deep', 'r1'), undefined, 'no hard questions were run');
  });

  describe('a verdict needs its questions (issue 26 item 8): 95% judged overall and 90% in every bucket', () => {
    /** `n` questions of `bucket`, each judged a win by two judges, or with no readable verdict when `unread`. */
    const questions = (bucket: QuestionResult['bucket'], n: number, unread = 0): QuestionResult[] =>
      Array.from({ length: n }, (_, i) =>
        result(
          `${bucket}${i}`,
          bucket,
          [
            ['judge_a', 1, i < unread ? null : 'win'],
            ['judge_b', 1, i < unread ? null : 'win'],
          ],
          [true, false],
        ),
      );
    const CERT = { counts: { light: 50, medium: 50, hard: 50 }, judges: ['judge_a', 'judge_b'] as const, repeats: 1 };

    it('two answered questions of 150 that every judge won: no verdict, the run ends incomplete', () => {
      const s = summarizeRun('certification', questions('light', 2), CERT);
      assert.deepEqual([s.coverage?.judged, s.coverage?.total, s.coverage?.met], [2, 150, false]);
      assert.equal(s.verdict, null);
      assert.equal(endStateOf('certification', 'completed', s), 'incomplete');
    });

    it('147 of 150 judged (98%), every bucket at least 90%: the verdict stands', () => {
      const s = summarizeRun('certification', [...questions('light', 50), ...questions('medium', 50), ...questions('hard', 50, 3)], CERT);
      assert.deepEqual([s.coverage?.judged, s.coverage?.met], [147, true]);
      assert.equal(s.verdict, 'certified');
      assert.equal(endStateOf('certification', 'completed', s), 'completed');
    });

    it('96% overall but a hard bucket at 88%: no verdict', () => {
      const s = summarizeRun('certification', [...questions('light', 50), ...questions('medium', 50), ...questions('hard', 50, 6)], CERT);
      assert.deepEqual([s.coverage?.judged, s.coverage?.perBucket.hard], [144, { judged: 44, total: 50 }]);
      assert.equal(s.coverage?.met, false);
      assert.equal(s.verdict, null);
    });

    it('a test run: short of the coverage it still completes (its results are not evidence); with no readable verdict it ends incomplete', () => {
      const partial = summarizeRun('test', questions('light', 10, 5), { ...CERT, counts: { light: 10, medium: 0, hard: 0 } });
      assert.equal(partial.coverage?.met, false);
      assert.equal(endStateOf('test', 'completed', partial), 'completed');
      const unread = summarizeRun('test', questions('light', 9, 9), { ...CERT, counts: { light: 9, medium: 0, hard: 0 } });
      assert.equal(unread.coverage?.judged, 0);
      assert.equal(endStateOf('test', 'completed', unread), 'incomplete');
      // A cancelled or failed run keeps its state; a summary from before coverage was recorded ends as it did then.
      assert.equal(endStateOf('test', 'cancelled', unread), 'cancelled');
      assert.equal(endStateOf('certification', 'completed', { ...unread, coverage: null }), 'completed');
    });
  });

  describe('and its judges’ verdicts (issue 38 item 2): 90% of planned judgments, 80% of each judge’s in every bucket', () => {
    const SLOTS = ['judge_a', 'judge_b', 'judge_c'] as const;
    const PLAN = { counts: { light: 50, medium: 50, hard: 50 }, judges: SLOTS, repeats: 2 };
    /** 50 questions per bucket, every judge a win on both repeats unless `silent(slot, bucket, question, repeat)`. */
    const run = (silent: (slot: string, bucket: string, i: number, repeat: number) => boolean): QuestionResult[] =>
      (['light', 'medium', 'hard'] as const).flatMap((bucket) =>
        Array.from({ length: 50 }, (_, i) =>
          result(
            `${bucket}${i}`,
            bucket,
            SLOTS.flatMap((slot) =>
              [1, 2].map((repeat) => [slot, repeat, silent(slot, bucket, i, repeat) ? null : 'win'] as [string, number, 'win' | null]),
            ),
            [true, false],
          ),
        ),
      );

    it('one judge silent throughout: every question judged, yet 600 of 900 judgments and judge_c 0 of 100 per bucket: incomplete, no verdict', () => {
      const s = summarizeRun(
        'certification',
        run((slot) => slot === 'judge_c'),
        PLAN,
      );
      assert.deepEqual([s.coverage?.judged, s.coverage?.total], [150, 150], 'the question rule alone would pass it');
      assert.deepEqual([s.coverage?.judgments?.readable, s.coverage?.judgments?.planned], [600, 900]);
      assert.deepEqual(s.coverage?.judgments?.perJudge.judge_c?.hard, { readable: 0, planned: 100 });
      assert.equal(s.coverage?.met, false);
      assert.equal(s.verdict, null);
      assert.equal(endStateOf('certification', 'completed', s), 'incomplete');
    });

    it('one judge short in one bucket: 80 of its 100 hard judgments pass, 79 do not (97.7% or more overall either way)', () => {
      // judge_c silent on both repeats of the first 10 hard questions: 80 of 100; 880 of 900 overall (97.8%).
      const at80 = summarizeRun(
        'certification',
        run((slot, bucket, i) => slot === 'judge_c' && bucket === 'hard' && i < 10),
        PLAN,
      );
      assert.deepEqual(at80.coverage?.judgments?.perJudge.judge_c?.hard, { readable: 80, planned: 100 });
      assert.equal(at80.coverage?.met, true);
      assert.equal(at80.verdict, 'certified');
      // One more of its hard judgments unread: 79 of 100 < 80%, though 879 of 900 (97.7%) overall.
      const at79 = summarizeRun(
        'certification',
        run((slot, bucket, i, repeat) => slot === 'judge_c' && bucket === 'hard' && (i < 10 || (i === 10 && repeat === 1))),
        PLAN,
      );
      assert.deepEqual(at79.coverage?.judgments?.perJudge.judge_c?.hard, { readable: 79, planned: 100 });
      assert.equal(at79.coverage?.met, false);
      assert.equal(at79.verdict, null);
    });

    it('every judge a little short: 810 of 900 (90%) passes, 801 of 900 (89%) does not, though each judge has 89% or more in every bucket', () => {
      // Repeat 2 unread on the first 10 questions of each bucket, for every judge: 90 of 100 each, 3 × 3 × 90 = 810;
      // on the first 11: 89 of 100 each (above 80%), 801 of 900 overall (89%).
      const at90 = summarizeRun(
        'certification',
        run((_s, _b, i, repeat) => repeat === 2 && i < 10),
        PLAN,
      );
      assert.deepEqual([at90.coverage?.judgments?.readable, at90.coverage?.met], [810, true]);
      const at89 = summarizeRun(
        'certification',
        run((_s, _b, i, repeat) => repeat === 2 && i < 11),
        PLAN,
      );
      assert.deepEqual(
        [at89.coverage?.judgments?.readable, at89.coverage?.judgments?.perJudge.judge_a?.light],
        [801, { readable: 89, planned: 100 }],
      );
      assert.equal(at89.coverage?.met, false);
    });
  });
});
