import assert from 'node:assert/strict';
import { CONVERGED_BELOW, heuristicJudgment } from '../../../domain/judge';
import { parseJudgment } from '../../../domain/judge-reply';

const LABELS = ['A', 'B', 'C'];
/** A verdict as the judge prompt asks for it; the reply adds its snake_case flag. */
const VERDICT = {
  scores: { A: 8, B: 6, C: 3 },
  best: 'A',
  why: 'most complete',
  divergence: 0.4,
  converged: false,
  contested: { label: 'C', quote: 'x', why: 'wrong' },
};
const reply = (over: Record<string, unknown> = {}): string => JSON.stringify({ ...VERDICT, factual_conflict: true, ...over });

describe('judge: reading a verdict and the heuristic fallback', () => {
  it('reads a verdict, also when wrapped in prose or a code fence', () => {
    const expected = { ...VERDICT, factualConflict: true };
    assert.deepEqual(parseJudgment(reply(), LABELS), expected);
    assert.deepEqual(parseJudgment(`Here is my verdict:\n\`\`\`json\n${reply()}\n\`\`\``, LABELS), expected);
  });

  it('refuses a verdict that is not the JSON asked for, or names a label it was not shown', () => {
    assert.equal(parseJudgment('A is best.', LABELS), undefined);
    assert.equal(parseJudgment(reply({ best: 'D' }), LABELS), undefined);
    assert.equal(parseJudgment(reply({ scores: { A: 8, B: 6 } }), LABELS), undefined, 'a shown answer left unscored');
    assert.equal(parseJudgment(reply({ divergence: 'high' }), LABELS), undefined);
  });

  it('clamps a score or divergence out of range (a grammar keeps the shape, not a decimal range) rather than lose the verdict', () => {
    const r = parseJudgment(reply({ divergence: 2, scores: { A: 15, B: -1, C: 3 } }), LABELS);
    assert.equal(r?.divergence, 1);
    assert.deepEqual(r?.scores, { A: 10, B: 0, C: 3 });
  });

  it('drops a contested passage that names an unknown label but keeps the verdict', () => {
    assert.equal(parseJudgment(reply({ contested: { label: 'Z', quote: 'q', why: 'w' } }), LABELS)?.contested, null);
  });

  it('heuristic: agreeing answers converge; the outlier scores lowest and is the contested one', () => {
    const same = 'Water boils at 100 degrees Celsius at sea level';
    const agree = heuristicJudgment([
      { label: 'A', text: same },
      { label: 'B', text: same },
      { label: 'C', text: same },
    ]);
    assert.equal(agree.divergence, 0);
    assert.ok(agree.converged);
    const split = heuristicJudgment([
      { label: 'A', text: same },
      { label: 'B', text: same },
      { label: 'C', text: 'Bananas are yellow fruit' },
    ]);
    assert.ok(split.divergence >= CONVERGED_BELOW && !split.converged);
    assert.equal(split.contested?.label, 'C');
    assert.ok(split.scores.C < split.scores.A && split.best !== 'C');
  });
});
