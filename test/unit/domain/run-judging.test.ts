import assert from 'node:assert/strict';
import {
  assignJudges,
  JUDGE_SLOTS,
  presentationOrder,
  readRunVerdict,
  runJudgePrompt,
  verdictScore,
  RUN_JUDGE_TAG,
} from '../../../domain/run-judging';

const pool = [
  { engineId: 'anthropic/claude-sonnet-4', maker: 'anthropic' },
  { engineId: 'openai/gpt-4.1', maker: 'openai' },
  { engineId: 'google/gemini-2.5-flash', maker: 'google' },
  { engineId: 'bedrock/meta.llama3-3-70b-instruct', maker: 'meta' },
];

describe('run judging: judges, recusal, order, verdicts', () => {
  it('fills judge_a..c from the pool; a judge of the baseline maker recuses itself for a reserve of another maker', () => {
    assert.deepEqual(
      assignJudges(JUDGE_SLOTS, pool, new Set(['sim'])).map((j) => [j.slot, j.engineId, j.recusal]),
      [
        ['judge_a', 'anthropic/claude-sonnet-4', null],
        ['judge_b', 'openai/gpt-4.1', null],
        ['judge_c', 'google/gemini-2.5-flash', null],
      ],
    );
    const recused = assignJudges(JUDGE_SLOTS, pool, new Set(['openai']));
    assert.equal(recused[1].engineId, 'bedrock/meta.llama3-3-70b-instruct');
    assert.deepEqual(recused[1].recusal, { engineId: 'openai/gpt-4.1', maker: 'openai', replacedBy: 'bedrock/meta.llama3-3-70b-instruct' });
  });

  it('when no reserve of another maker is free the judge stays, and the recusal records that it could not be replaced', () => {
    const [a, b, c] = assignJudges(JUDGE_SLOTS, pool, new Set(['anthropic', 'openai', 'google']));
    assert.equal(a.recusal?.replacedBy, 'bedrock/meta.llama3-3-70b-instruct');
    assert.deepEqual([b.engineId, b.recusal?.replacedBy], ['openai/gpt-4.1', null]);
    assert.deepEqual([c.engineId, c.recusal?.replacedBy], ['google/gemini-2.5-flash', null]);
    assert.deepEqual(
      assignJudges(['judge_a'], pool, new Set()).map((j) => j.slot),
      ['judge_a'],
      'only the slots asked for',
    );
  });

  it('orders answers per judge and repeat from the seed, mirrored on the second repeat; the same inputs give the same order', () => {
    const r1 = presentationOrder('seed', 'q1', 'judge_a', 1, 4);
    assert.deepEqual([...r1].sort(), [0, 1, 2, 3]);
    assert.deepEqual(presentationOrder('seed', 'q1', 'judge_a', 2, 4), [...r1].reverse());
    assert.deepEqual(presentationOrder('seed', 'q1', 'judge_a', 1, 4), r1);
    // Over many questions, each judge's first repeat puts the mode first about half the time, and judges differ.
    const first = (slot: 'judge_a' | 'judge_b'): boolean[] =>
      Array.from({ length: 400 }, (_, q) => presentationOrder('s', `q${q}`, slot, 1, 2)[0] === 0);
    const a = first('judge_a');
    const share = a.filter(Boolean).length / a.length;
    assert.ok(share > 0.4 && share < 0.6, `mode first ${share}`);
    assert.notDeepEqual(a, first('judge_b'));
  });

  it('reads a verdict for the mode from the label it was shown at; ties count half; anything else is unusable', () => {
    assert.equal(readRunVerdict('{"winner":"A","why":"exact"}', 2, 0), 'win');
    assert.equal(readRunVerdict('Verdict: {"winner": "b"}', 2, 0), 'loss');
    assert.equal(readRunVerdict('{"winner":"tie"}', 2, 1), 'tie');
    assert.equal(readRunVerdict('{"winner":"C"}', 2, 0), undefined, 'a label that was not shown');
    assert.equal(readRunVerdict('A is better', 2, 0), undefined);
    assert.deepEqual(
      ['win', 'tie', 'loss'].map((v) => verdictScore(v as 'win')),
      [1, 0.5, 0],
    );
  });

  it('shows the judge the reference and the anonymous answers in order, tagged so any engine knows what is asked', () => {
    const [system, user] = runJudgePrompt('pairwise', 'What is 6 x 7?', '42', ['Final answer: 41', 'Final answer: 42']);
    assert.ok(system.content.startsWith(RUN_JUDGE_TAG));
    assert.match(user.content, /Reference answer: 42\n\nAnswer A:\nFinal answer: 41\n\nAnswer B:\nFinal answer: 42$/);
    assert.doesNotMatch(user.content, /openai|anthropic|sim\//, 'no engine names');
  });
});
