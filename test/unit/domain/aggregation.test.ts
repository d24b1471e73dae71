import assert from 'node:assert/strict';
import {
  ballotSchema,
  guardSynthesis,
  pinnedSynthesisPrompt,
  plurality,
  questionAnswerKind,
  readAnswer,
  readBallot,
  shownAnswer,
  speakerOf,
  voteJudgment,
  waveAgrees,
  withAnswerLine,
  type SeatBallot,
} from '../../../domain/aggregation';

const ballot = (role: string, answer: string | null, cut = false): SeatBallot => ({
  role,
  answer,
  readBy: answer === null ? null : 'text',
  cut,
});

describe('aggregation: reading answers by kind', () => {
  it('reads nothing without a declared kind unless the text has an explicit Final answer line', () => {
    assert.equal(readAnswer('The tower is 330 metres tall and was built in 1889.', undefined), undefined);
    assert.equal(readAnswer('42', undefined), undefined, 'a bare number in prose is no vote');
    assert.equal(readAnswer('Some working.\nFinal answer: 42', undefined), 'number 42');
    assert.equal(readAnswer('**Final answer:** Paris', undefined), 'text paris');
  });

  it('choice: one letter, or exactly one option named; two letters or a hedge is none', () => {
    const kind = { kind: 'choice' as const, choices: ['red', 'green', 'blue'] };
    assert.equal(readAnswer('Final answer: (B)', kind), 'B');
    assert.equal(readAnswer('I think it is blue.\nThe answer is C', kind), 'C');
    assert.equal(readAnswer('Final answer: green', kind), 'B');
    assert.equal(readAnswer('Final answer: A or B', kind), undefined);
    assert.equal(readAnswer('Final answer: B. red', kind), undefined, 'B with A’s text contradicts itself');
  });

  it('yes_no: a leading yes/no (true/false), unhedged', () => {
    const kind = { kind: 'yes_no' as const };
    assert.equal(readAnswer('Final answer: No, it does not.', kind), 'no');
    assert.equal(readAnswer('Final answer: True', kind), 'yes');
    assert.equal(readAnswer('Final answer: maybe', kind), undefined);
  });

  it('number: exactly one number, digits or words; text is no number', () => {
    const kind = { kind: 'number' as const };
    assert.equal(readAnswer('Final answer: forty-two', kind), 'number 42');
    assert.equal(readAnswer('Final answer: $1,234.00', kind), 'number 1234');
    assert.equal(readAnswer('Final answer: 42 or 43', kind), undefined);
    assert.equal(readAnswer('Final answer: Paris', kind), undefined);
  });

  it('short_text: the stated text, formatting forgiven; math: the same value', () => {
    assert.equal(readAnswer('Final answer: **Paris.**', { kind: 'short_text' }), 'text paris');
    assert.equal(readAnswer('Final answer: \\frac{2}{4}', { kind: 'math' }), readAnswer('Final answer: 1/2', { kind: 'math' }));
  });

  it("a run question's kind comes from its set, a generated one's from its reference's shape", () => {
    assert.deepEqual(questionAnswerKind({ answer: 'B', answerKind: 'choice', choices: ['x', 'y'] }), {
      kind: 'choice',
      choices: ['x', 'y'],
    });
    assert.deepEqual(questionAnswerKind({ answer: 'yes', answerKind: 'yes-no' }), { kind: 'yes_no' });
    assert.deepEqual(questionAnswerKind({ answer: '17' }), { kind: 'number' });
    assert.deepEqual(questionAnswerKind({ answer: '2024-03-05' }), { kind: 'short_text' });
  });

  it('shows keys as people read them', () => {
    assert.equal(shownAnswer('number 42'), '42');
    assert.equal(shownAnswer('text paris'), 'paris');
    assert.equal(shownAnswer('B'), 'B');
  });
});

describe('aggregation: the vote', () => {
  it('plurality: the answer most seats gave wins; unreadable seats abstain', () => {
    const v = plurality([ballot('seat1', 'B'), ballot('seat2', null), ballot('seat3', 'B')]);
    assert.equal(v.kind, 'winner');
    assert.deepEqual(v.kind === 'winner' && v.top, { answer: 'B', votes: 2, seats: ['seat1', 'seat3'] });
  });

  it('a tie lists only the tied answers, each with its seats', () => {
    const v = plurality([ballot('seat1', 'A'), ballot('seat2', 'C'), ballot('seat3', null)]);
    assert.equal(v.kind, 'tie');
    assert.deepEqual(v.kind === 'tie' && v.tied.map((t) => [t.answer, t.seats]), [
      ['A', ['seat1']],
      ['C', ['seat2']],
    ]);
  });

  it('none readable: no winner', () => {
    assert.deepEqual(plurality([ballot('seat1', null), ballot('seat2', null)]), { kind: 'none' });
  });

  it('the winning answer speaks through its first uncut seat', () => {
    const ballots = [ballot('seat1', 'yes', true), ballot('seat2', 'yes'), ballot('seat3', 'no')];
    const v = plurality(ballots);
    assert.equal(v.kind === 'winner' && speakerOf(v.top, ballots), 'seat2');
  });

  it('a first wave settles the question only when every seat is readable and agrees', () => {
    assert.equal(waveAgrees([ballot('seat1', 'B'), ballot('seat2', 'B')]), true);
    assert.equal(waveAgrees([ballot('seat1', 'B'), ballot('seat2', 'C')]), false);
    assert.equal(waveAgrees([ballot('seat1', 'B'), ballot('seat2', null)]), false);
    assert.equal(waveAgrees([ballot('seat1', 'B')]), false, 'one seat is no agreement');
  });

  it("a counted round's line: votes as scores, divergence from the winner's share", () => {
    const j = voteJudgment(
      [
        { label: 'A', answer: 'B' },
        { label: 'B', answer: 'B' },
        { label: 'C', answer: null },
      ],
      'A',
    );
    assert.deepEqual(j.scores, { A: 6.67, B: 6.67, C: 0 });
    assert.equal(j.divergence, 0.333);
    assert.equal(j.converged, false);
    assert.equal(
      voteJudgment(
        [
          { label: 'A', answer: 'x' },
          { label: 'B', answer: 'x' },
        ],
        'A',
      ).converged,
      true,
    );
  });
});

describe('aggregation: the ballot call', () => {
  it('asks an enum per label for a choice and yes/no, each nullable', () => {
    const s = ballotSchema(['A', 'B'], { kind: 'choice', choices: ['x', 'y', 'z'] }).schema;
    assert.deepEqual((s.properties as Record<string, unknown>).A, { anyOf: [{ type: 'null' }, { type: 'string', enum: ['A', 'B', 'C'] }] });
    assert.deepEqual(s.required, ['A', 'B']);
    const yn = ballotSchema(['A'], { kind: 'yes_no' }).schema;
    assert.deepEqual((yn.properties as Record<string, unknown>).A, { anyOf: [{ type: 'null' }, { type: 'string', enum: ['yes', 'no'] }] });
  });

  it('reads its reply through the same rules as a seat’s text; a broken reply reads nothing', () => {
    const choice = { kind: 'choice' as const, choices: ['red', 'green', 'blue'] };
    assert.deepEqual(readBallot('{"A":"B","B":null,"C":"K","D":"blue"}', ['A', 'B', 'C', 'D'], choice), {
      A: 'B',
      B: null,
      C: null,
      D: 'C',
    });
    assert.deepEqual(readBallot('{"A": 42, "B": "forty-two"}', ['A', 'B'], { kind: 'number' }), { A: 'number 42', B: 'number 42' });
    assert.deepEqual(readBallot('not json', ['A'], { kind: 'yes_no' }), { A: null });
  });

  it('states the answer the ballot read after the winning text', () => {
    assert.equal(withAnswerLine('It is the second one.\n', 'B'), 'It is the second one.\n\nFinal answer: B');
  });
});

describe('aggregation: the pinned synthesis and its guard', () => {
  it('states the chosen answer and ends with the format request', () => {
    const prompt = pinnedSynthesisPrompt([{ role: 'user', content: 'Q?' }], 'seat text', 'number 42');
    assert.match(prompt[0].content, /keep exactly that answer/);
    assert.ok(prompt[1].content.endsWith('Final answer: 42'));
  });

  it('keeps a synthesis only when it is uncut and states the chosen answer', () => {
    const kind = { kind: 'number' as const };
    assert.equal(guardSynthesis('Because…\nFinal answer: 42', 'stop', 'number 42', kind), 'kept');
    assert.equal(guardSynthesis('Because…\nFinal answer: 41', 'stop', 'number 42', kind), 'answer_differs');
    assert.equal(guardSynthesis('Because of many reasons', 'stop', 'number 42', kind), 'unreadable');
    assert.equal(guardSynthesis('Because…\nFinal answer: 42', 'length', 'number 42', kind), 'cut');
    assert.equal(guardSynthesis('   ', 'stop', undefined, undefined), 'unreadable');
    assert.equal(
      guardSynthesis('A rewritten essay.', 'stop', undefined, undefined),
      'kept',
      'without an answer read, only a cut or empty text is refused',
    );
  });
});
