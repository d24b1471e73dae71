import assert from 'node:assert/strict';
import { checkAnswer, extractFinalAnswer } from '../../../domain/questions/check';
import { ELEMENTS } from '../../../domain/questions/facts/elements';
import { chainQuestion, expressionQuestion, render, type Expr } from '../../../domain/questions/families/arithmetic';
import { arrangementsQuestion, committeeQuestion, divisibleQuestion } from '../../../domain/questions/families/counting';
import { daysBetweenQuestion, shiftedDate, weekdayQuestion } from '../../../domain/questions/families/dates';
import {
  atomicNumberQuestion,
  combinedNameQuestion,
  combinedNumberQuestion,
  elementNameQuestion,
} from '../../../domain/questions/families/elements';
import {
  CATEGORIES,
  drawGridPuzzle,
  gridSolutions,
  whatQuestion,
  whoQuestion,
  type Clue,
  type GridPuzzle,
} from '../../../domain/questions/families/logic-grid';
import { letterCountQuestion, pickLettersQuestion, pipelineQuestion } from '../../../domain/questions/families/strings';
import { LADDERS, mixedAmount, scaleDown, scaleUp } from '../../../domain/questions/families/units';
import { ageQuestion, shoppingQuestion, tankQuestion } from '../../../domain/questions/families/word-problems';
import { CLUSTERS, FAMILIES, generateQuestions } from '../../../domain/questions/generate';
import { parseQuestionSet } from '../../../domain/questions/import';
import { makeRng } from '../../../domain/questions/rng';
import { BUCKETS, QUESTION_ID, type Question } from '../../../domain/questions/types';

const EVEN = { light: 50, medium: 50, hard: 50 };
const engineReply = (answer: string): string =>
  `Working through the question step by step, the result is ${answer}.\n\nFinal answer: ${answer}`;

/** A wrong answer of the same shape: the next integer, the next day, a longer decimal, an extra letter. */
function perturbed(answer: string): string {
  if (/^-?\d+$/.test(answer)) return String(BigInt(answer) + 1n);
  if (/^-?\d+\.\d+$/.test(answer)) return `${answer}1`;
  if (/^\d{4}-\d{2}-\d{2}$/.test(answer)) return new Date(Date.parse(`${answer}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
  return `${answer}x`;
}

describe('known-answer questions: generator', () => {
  const set = generateQuestions(7, EVEN);

  it('is deterministic from the seed, and another seed gives another set', () => {
    assert.deepEqual(generateQuestions(7, EVEN), set);
    const other = generateQuestions(8, EVEN);
    assert.notDeepEqual(
      other.map((q) => q.question),
      set.map((q) => q.question),
    );
  });

  it('honours the count of each bucket, in bucket order, and refuses impossible counts', () => {
    const small = generateQuestions(1, { light: 3, medium: 0, hard: 7 });
    assert.deepEqual(
      small.map((q) => q.bucket),
      [...Array<string>(3).fill('light'), ...Array<string>(7).fill('hard')],
    );
    assert.deepEqual(generateQuestions(1, { light: 0, medium: 0, hard: 0 }), []);
    assert.throws(() => generateQuestions(1, { light: -1, medium: 0, hard: 0 }), RangeError);
    assert.throws(() => generateQuestions(1, { light: 1.5, medium: 0, hard: 0 }), RangeError);
    assert.throws(() => generateQuestions(1, { light: 5001, medium: 0, hard: 0 }), RangeError);
  });

  it('spreads each bucket over all eight families round-robin, and each family over its templates', () => {
    assert.ok(FAMILIES.length >= 8);
    for (const bucket of BUCKETS) {
      const perFamily = new Map<string, number>();
      for (const q of set.filter((x) => x.bucket === bucket))
        perFamily.set(q.cluster.split('.')[0], (perFamily.get(q.cluster.split('.')[0]) ?? 0) + 1);
      assert.deepEqual([...perFamily.keys()].sort(), [...FAMILIES].sort(), bucket);
      // 50 over 8 families: 6 or 7 each.
      for (const [family, n] of perFamily) assert.ok(n === 6 || n === 7, `${bucket} ${family}: ${n}`);
    }
    const clusters = new Set(set.map((q) => q.cluster));
    assert.deepEqual([...clusters].sort(), [...CLUSTERS].sort(), 'every template appears in a 150-question set');
    for (const family of FAMILIES) assert.ok(CLUSTERS.filter((c) => c.startsWith(`${family}.`)).length >= 2, family);
    // The seed shuffles the family order.
    assert.notDeepEqual(
      generateQuestions(8, EVEN)
        .slice(0, 8)
        .map((q) => q.cluster.split('.')[0]),
      set.slice(0, 8).map((q) => q.cluster.split('.')[0]),
    );
  });

  it('gives unique ids safe in a workflow id, and every question asks for a Final answer line', () => {
    assert.equal(new Set(set.map((q) => q.id)).size, set.length);
    assert.equal(new Set(set.map((q) => q.question)).size, set.length, 'no question repeats');
    for (const q of set) {
      assert.match(q.id, /^[A-Za-z0-9._-]{1,64}$/);
      assert.match(q.id, QUESTION_ID);
      assert.match(q.question, /Final answer: <answer>"\.$/);
      assert.ok(q.answer.length > 0 && q.answer.length <= 200);
    }
  });

  it('accepts every generated answer in both reply forms, and rejects a perturbed one', () => {
    const all: Question[] = [...set, ...generateQuestions(123, EVEN), ...generateQuestions(-5, EVEN)];
    for (const q of all) {
      assert.ok(checkAnswer(`Final answer: ${q.answer}`, q.answer), `${q.id}: ${q.answer}`);
      assert.ok(checkAnswer(engineReply(q.answer), q.answer), `${q.id}: ${q.answer}`);
      const wrong = perturbed(q.answer);
      assert.ok(!checkAnswer(`Final answer: ${wrong}`, q.answer), `${q.id}: ${wrong} for ${q.answer}`);
      assert.ok(!checkAnswer(engineReply(wrong), q.answer), `${q.id}: ${wrong} for ${q.answer}`);
    }
  });
});

/** An independent brute force over the puzzle's clues: the generator's own solver is not trusted here. */
function solveByHand(p: GridPuzzle): number[][][] {
  const n = p.people.length;
  const perms: number[][] = [];
  const permute = (prefix: number[]): void => {
    if (prefix.length === n) perms.push(prefix);
    else for (let v = 0; v < n; v++) if (!prefix.includes(v)) permute([...prefix, v]);
  };
  permute([]);
  let grids: number[][][] = [[]];
  for (let c = 0; c < p.categories.length; c++) grids = grids.flatMap((g) => perms.map((perm) => [...g, perm]));
  const holds = (clue: Clue, g: number[][]): boolean => {
    if (clue.kind === 'is') return g[clue.cat][clue.person] === clue.value;
    if (clue.kind === 'not') return g[clue.cat][clue.person] !== clue.value;
    const owner = g[clue.catA].findIndex((v) => v === clue.valueA);
    return clue.kind === 'same' ? g[clue.catB][owner] === clue.valueB : g[clue.catB][owner] !== clue.valueB;
  };
  return grids.filter((g) => p.clues.every((c) => holds(c, g)));
}

describe('known-answer questions: logic grids', () => {
  it('every drawn puzzle has exactly one solution, the hidden one, and needs each of its clues', () => {
    for (const bucket of BUCKETS) {
      for (let seed = 0; seed < 25; seed++) {
        const puzzle = drawGridPuzzle(makeRng(seed), bucket);
        const solutions = solveByHand(puzzle);
        assert.equal(solutions.length, 1, `${bucket} ${seed}`);
        assert.deepEqual(solutions[0], puzzle.solution);
        for (const clue of puzzle.clues) {
          assert.ok(solveByHand({ ...puzzle, clues: puzzle.clues.filter((c) => c !== clue) }).length > 1, 'no clue is surplus');
        }
      }
    }
  });

  it('a hand-made puzzle: Ann has neither the cat nor the dog, Ben not the cat, so Cara owns the cat', () => {
    const puzzle: GridPuzzle = {
      people: ['Ann', 'Ben', 'Cara'],
      categories: [CATEGORIES[0], CATEGORIES[1]],
      clues: [
        { kind: 'not', person: 0, cat: 0, value: 0 },
        { kind: 'not', person: 0, cat: 0, value: 1 },
        { kind: 'not', person: 1, cat: 0, value: 0 },
        { kind: 'same', catA: 0, valueA: 2, catB: 1, valueB: 1 },
        { kind: 'differ', catA: 0, valueA: 0, catB: 1, valueB: 0 },
      ],
      // Ann fish and coffee; Ben dog and tea; Cara cat and milk.
      solution: [
        [2, 1, 0],
        [1, 0, 2],
      ],
    };
    assert.equal(gridSolutions(puzzle).length, 1);
    const who = whoQuestion(puzzle, 0);
    assert.equal(who.answer, 'Cara');
    assert.match(who.question, /Ann does not own the cat\./);
    assert.match(who.question, /The owner of the fish drinks coffee\./);
    assert.match(who.question, /The owner of the cat does not drink tea\./);
    assert.match(who.question, /Who is the owner of the cat\?/);
    assert.equal(whatQuestion(puzzle, 1).answer, 'tea');
  });
});

describe('known-answer questions: fixed questions answered by hand', () => {
  it('arithmetic', () => {
    const chain = chainQuestion({
      start: 17,
      ops: [
        { op: 'add', n: 5 },
        { op: 'multiply', n: 3 },
        { op: 'subtract', n: 8 },
      ],
    });
    assert.equal(
      chain.question,
      'Start with 17. Add 5, then multiply by 3, then subtract 8. What number do you end with? Answer with the number only.',
    );
    assert.equal(chain.answer, '58');
    assert.equal(
      chainQuestion({
        start: 100,
        ops: [
          { op: 'divide', n: 4 },
          { op: 'subtract', n: 30 },
        ],
      }).answer,
      '-5',
    );
    const e: Expr = { op: '-', left: { op: '*', left: { op: '+', left: 3, right: 4 }, right: 5 }, right: 6 };
    assert.equal(render(e), '(3 + 4) × 5 − 6');
    assert.equal(expressionQuestion(e).answer, '29');
    assert.equal(render({ op: '+', left: 2, right: { op: '*', left: 3, right: 4 } }), '2 + 3 × 4');
    assert.equal(
      expressionQuestion({ op: '-', left: 10, right: { op: '+', left: 2, right: 3 } }).question,
      'Evaluate 10 − (2 + 3). Answer with the number only.',
    );
    assert.equal(expressionQuestion({ op: '-', left: 10, right: { op: '+', left: 2, right: 3 } }).answer, '5');
  });

  it('units', () => {
    const [time, metric] = LADDERS;
    const down = scaleDown({ ladder: metric, from: 0, to: 2, value: 3 });
    assert.equal(down.question, 'How many centimetres are there in 3 kilometres? Answer with the number only.');
    assert.equal(down.answer, '300000');
    const up = scaleUp({ ladder: time, from: 2, to: 4, value: 2 });
    assert.equal(up.question, 'Convert 7200 seconds to hours. Answer with the number only.');
    assert.equal(up.answer, '2');
    const mixed = mixedAmount({ ladder: time, first: 2, values: [2, 15, 40] });
    assert.equal(
      mixed.question,
      'How many seconds are there in 2 hours, 15 minutes and 40 seconds altogether? Answer with the number only.',
    );
    assert.equal(mixed.answer, '8140');
    assert.equal(mixedAmount({ ladder: LADDERS[2], first: 2, values: [11, 1] }).answer, '133');
  });

  it('dates', () => {
    const leap = shiftedDate({ start: { year: 2024, month: 2, day: 27 }, days: 3, longForm: false });
    assert.equal(leap.question, 'What date is 3 days after 2024-02-27? Answer with the date in YYYY-MM-DD format.');
    assert.equal(leap.answer, '2024-03-01');
    const back = shiftedDate({ start: { year: 2023, month: 3, day: 1 }, days: -1, longForm: true });
    assert.equal(back.question, 'What date is 1 day before March 1, 2023? Answer with the date in YYYY-MM-DD format.');
    assert.equal(back.answer, '2023-02-28');
    assert.equal(
      daysBetweenQuestion({ from: { year: 2024, month: 1, day: 1 }, to: { year: 2024, month: 12, day: 31 }, longForm: true }).answer,
      '365',
    );
    assert.equal(
      daysBetweenQuestion({ from: { year: 1999, month: 12, day: 31 }, to: { year: 2000, month: 3, day: 1 }, longForm: false }).answer,
      '61',
    );
    const weekday = weekdayQuestion({ start: { year: 2024, month: 3, day: 5 }, days: 100, longForm: true });
    assert.match(weekday.question, /^March 5, 2024 is a Tuesday\. What day of the week is 100 days after it\?/);
    assert.equal(weekday.answer, 'Thursday');
    assert.equal(weekdayQuestion({ start: { year: 2000, month: 1, day: 1 }, days: -1, longForm: false }).answer, 'Friday');
  });

  it('counting', () => {
    assert.equal(committeeQuestion({ n: 5, k: 2, feud: false }).answer, '10');
    // C(6,3) − C(4,1): all committees less those holding both of the feuding pair.
    assert.equal(committeeQuestion({ n: 6, k: 3, feud: true }).answer, '16');
    assert.equal(arrangementsQuestion('level').answer, '30');
    assert.equal(arrangementsQuestion('mississippi').answer, '34650');
    assert.equal(arrangementsQuestion('lamp').answer, '24');
    assert.equal(divisibleQuestion({ limit: 30, divisors: [3, 5] }).answer, '14');
    const excluded = divisibleQuestion({ limit: 30, divisors: [2, 3], exclude: 5 });
    assert.equal(
      excluded.question,
      'How many whole numbers from 1 to 30 inclusive are divisible by 2 or 3 but not by 5? Answer with the number only.',
    );
    assert.equal(excluded.answer, '16');
  });

  it('strings', () => {
    assert.equal(pipelineQuestion('planet', [{ op: 'reverse' }]).answer, 'tenalp');
    assert.equal(pipelineQuestion('planet', [{ op: 'reverse' }, { op: 'shift', by: 1 }]).answer, 'ufobmq');
    assert.equal(pipelineQuestion('garden', [{ op: 'drop-vowels' }, { op: 'sort' }]).answer, 'dgnr');
    assert.equal(pipelineQuestion('zephyr', [{ op: 'swap-ends' }]).answer, 'rephyz');
    assert.equal(pipelineQuestion('zephyr', [{ op: 'shift', by: 2 }]).answer, 'bgrjat');
    assert.equal(letterCountQuestion('mississippi', ['s']).answer, '4');
    const two = letterCountQuestion('mississippi', ['s', 'i']);
    assert.equal(
      two.question,
      'How many times do the letters "s" and "i" appear in "mississippi", all counted together? Answer with the number only.',
    );
    assert.equal(two.answer, '8');
    assert.equal(pickLettersQuestion(['apple', 'banana', 'cherry'], 'second').answer, 'pah');
    assert.equal(pickLettersQuestion(['apple', 'banana', 'cherry'], 'last-but-one').answer, 'lnr');
  });

  it('word problems', () => {
    const notebook = { singular: 'notebook', plural: 'notebooks' };
    const pen = { singular: 'pen', plural: 'pens' };
    const change = shoppingQuestion({
      name: 'Maya',
      lines: [
        { count: 3, item: notebook, cents: 400 },
        { count: 2, item: pen, cents: 150 },
      ],
      paidCents: 2000,
    });
    assert.equal(
      change.question,
      'Maya buys 3 notebooks at $4 each and 2 pens at $1.50 each. Maya pays with $20. How much change, in dollars, does Maya get? Answer with the number only.',
    );
    assert.equal(change.answer, '5');
    // $15 less 10% is $13.50; change from $20 is $6.50.
    assert.equal(
      shoppingQuestion({
        name: 'Maya',
        lines: [
          { count: 3, item: notebook, cents: 400 },
          { count: 2, item: pen, cents: 150 },
        ],
        discount: 10,
        paidCents: 2000,
      }).answer,
      '6.50',
    );
    assert.equal(shoppingQuestion({ name: 'Omar', lines: [{ count: 2, item: pen, cents: 225 }] }).answer, '4.50');
    assert.equal(tankQuestion({ capacity: 240, inlets: [12], leak: 4, start: 0 }).answer, '30');
    assert.equal(tankQuestion({ capacity: 500, inlets: [10, 15], leak: 5, start: 100 }).answer, '20');
    assert.equal(ageQuestion({ kind: 'sum-difference', older: 25, younger: 18 }).answer, '18');
    const later = ageQuestion({ kind: 'times-later', older: 30, younger: 10, years: 10 });
    assert.match(later.question, /Nora is 3 times as old as Ivo\. In 10 years, Nora will be 2 times as old as Ivo\./);
    assert.equal(later.answer, '30');
    const three = ageQuestion({ kind: 'three-people', ann: 24, ben: 8, cara: 20 });
    assert.match(three.question, /Ann is 3 times as old as Ben\. Cara is 4 years younger than Ann\. The three ages add up to 52\./);
    assert.equal(three.answer, '20');
  });

  it('elements, from the shipped table', () => {
    assert.ok(ELEMENTS.length >= 60);
    ELEMENTS.forEach((e, i) => assert.equal(e.number, i + 1));
    assert.equal(new Set(ELEMENTS.map((e) => e.symbol)).size, ELEMENTS.length);
    const spot = Object.fromEntries(ELEMENTS.map((e) => [e.symbol, `${e.number} ${e.name}`]));
    assert.deepEqual(
      ['H', 'C', 'K', 'Fe', 'Ag', 'Sn', 'W', 'Au', 'Hg', 'Pb', 'U'].map((s) => spot[s]),
      [
        '1 Hydrogen',
        '6 Carbon',
        '19 Potassium',
        '26 Iron',
        '47 Silver',
        '50 Tin',
        '74 Tungsten',
        '79 Gold',
        '80 Mercury',
        '82 Lead',
        '92 Uranium',
      ],
    );
    const fe = atomicNumberQuestion('Fe');
    assert.equal(fe.question, 'What is the atomic number of the element whose chemical symbol is Fe? Answer with the number only.');
    assert.equal(fe.answer, '26');
    assert.equal(combinedNumberQuestion('Na', 'Cl', 'sum').answer, '28');
    assert.equal(combinedNumberQuestion('Fe', 'Au', 'difference').answer, '53');
    assert.equal(elementNameQuestion(26).answer, 'Iron');
    assert.equal(combinedNameQuestion('C', 'O', 'sum').answer, 'Silicon');
    assert.throws(() => elementNameQuestion(13), RangeError, 'aluminium has two spellings: never an answer');
  });
});

describe('known-answer questions: checker', () => {
  it('reads the text after the last Final answer, else the last non-empty line', () => {
    assert.equal(extractFinalAnswer('Some work.\nFinal answer: 42\nHope this helps!'), '42');
    assert.equal(extractFinalAnswer('Final answer: 41\nWait, no.\nFinal Answer: 42'), '42');
    assert.equal(extractFinalAnswer('**Final answer:** 42'), '42');
    assert.equal(extractFinalAnswer('Final answer:\n\n42\n'), '42');
    assert.equal(extractFinalAnswer('Step 1.\n\n  The result is 42  \n\n'), 'The result is 42');
    assert.equal(extractFinalAnswer(''), '');
  });

  it('accepts a right answer however it is formatted', () => {
    const accept: [string, string][] = [
      ['Final answer: 42', '42'],
      ['Final answer: **42**', '42'],
      ['**Final answer:** 42', '42'],
      ['**Final answer**: `42`', '42'],
      ['FINAL ANSWER: 42.', '42'],
      ['Final answer: 42.0', '42'],
      ['Final answer: forty-two', '42'],
      ['Final answer: Forty Two', '42'],
      ['Final answer: 42 km', '42'],
      ['Final answer: 42 (forty-two)', '42'],
      ['Final answer: 6 × 7 = 42', '42'],
      ['Final answer: $\\boxed{42}$', '42'],
      ['I worked it out.\nThe answer is 42', '42'],
      ['Final answer: 1,234', '1234'],
      ['Final answer: one thousand two hundred and thirty-four', '1234'],
      ['Final answer: nine thousand nine hundred ninety-nine', '9999'],
      ['Final answer: 160,000,000,000 mg', '160000000000'],
      ['Final answer: −5', '-5'],
      ['Final answer: minus five', '-5'],
      ['Final answer: $6.50', '6.50'],
      ['Final answer: 6.5', '6.50'],
      ['Final answer: March 5, 2024', '2024-03-05'],
      ['Final answer: 5 March 2024', '2024-03-05'],
      ['Final answer: Mar 5th, 2024.', '2024-03-05'],
      ['Final answer: **2024-03-05**', '2024-03-05'],
      ['Final answer: tuesday', 'Tuesday'],
      ['Final answer: "Tuesday".', 'Tuesday'],
      ['Final answer: TENALP', 'tenalp'],
      ['Final answer: iron', 'Iron'],
    ];
    for (const [reply, reference] of accept) assert.ok(checkAnswer(reply, reference), `${reply} for ${reference}`);
  });

  it('rejects a wrong, ambiguous or missing answer', () => {
    const reject: [string, string][] = [
      ['Final answer: 43', '42'],
      ['Final answer: 4.2', '42'],
      ['Final answer: 420', '42'],
      ['Final answer: -42', '42'],
      ['Final answer: 42.5', '42'],
      ['Final answer: 4,2', '42'],
      ['Final answer: 42 or 43', '42'],
      ['Final answer: 42, 43', '42'],
      ['Final answer: 42-43', '42'],
      ['Final answer: not 42', '42'],
      ['Final answer: forty-three', '42'],
      ['The result is 42.\nFinal answer: 43', '42'],
      ['Final answer: 42\nOn reflection:\nFinal answer: 41', '42'],
      ['Final answer:', '42'],
      ['', '42'],
      ['Final answer: 6.49', '6.50'],
      ['Final answer: 2024-03-06', '2024-03-05'],
      ['Final answer: March 5, 2023', '2024-03-05'],
      ['Final answer: 03/05/2024', '2024-03-05'],
      ['Final answer: March 5, 2024 or March 6, 2024', '2024-03-05'],
      ['Final answer: Wednesday', 'Tuesday'],
      ['Final answer: tenalq', 'tenalp'],
      ['Final answer: Iron or Cobalt', 'Iron'],
    ];
    for (const [reply, reference] of reject) assert.ok(!checkAnswer(reply, reference), `${reply} for ${reference}`);
  });
});

describe('known-answer questions: JSONL import', () => {
  const line = (fields: Record<string, unknown>): string =>
    JSON.stringify({ id: 'q1', question: 'What is 6 × 7?', answer: '42', difficulty: 'light', cluster: 'org.math', ...fields });

  it('reads a good file: blank lines skipped, CRLF allowed, easy means light', () => {
    const text = [
      line({}),
      '',
      line({ id: 'q-2.b_c', difficulty: 'easy' }),
      '   ',
      line({ id: 'q3', difficulty: 'hard', cluster: 'org.geo' }),
    ].join('\r\n');
    const parsed = parseQuestionSet(`${text}\n`);
    assert.deepEqual(parsed, {
      ok: true,
      questions: [
        { id: 'q1', question: 'What is 6 × 7?', answer: '42', bucket: 'light', cluster: 'org.math' },
        { id: 'q-2.b_c', question: 'What is 6 × 7?', answer: '42', bucket: 'light', cluster: 'org.math' },
        { id: 'q3', question: 'What is 6 × 7?', answer: '42', bucket: 'hard', cluster: 'org.geo' },
      ],
    });
  });

  it('reports every bad line with its number and reason, and returns no question', () => {
    const text = [
      line({}), // 1 good
      '{"id": "q2", "question": ', // 2 not JSON
      line({ id: 'q3', answer: undefined }), // 3 missing answer
      line({ id: 'q 4/x' }), // 4 bad id characters
      line({ id: 'q1' }), // 5 duplicate of line 1
      line({ id: 'q6', difficulty: 'extreme' }), // 6 unknown difficulty
      line({ id: 'q7', question: 'x'.repeat(8001) }), // 7 over-long question
      line({ id: 'q8', answer: 'a\u0000b' }), // 8 NUL
      line({ id: 'q9', cluster: '  ' }), // 9 empty cluster
      line({ id: 'q10', answer: 'y'.repeat(201) }), // 10 over-long answer
      '[1, 2]', // 11 not an object
      line({ id: 'q12' }), // 12 good
    ].join('\n');
    const parsed = parseQuestionSet(text);
    assert.equal(parsed.ok, false);
    assert.ok(!('questions' in parsed));
    if (parsed.ok) return;
    assert.deepEqual(
      parsed.errors.map((e) => e.line),
      [2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
    );
    const reason = (n: number): string => parsed.errors.find((e) => e.line === n)?.reason ?? '';
    assert.match(reason(2), /not valid JSON/);
    assert.match(reason(3), /answer is missing/);
    assert.match(reason(4), /id may use only letters, digits/);
    assert.match(reason(5), /duplicate id "q1": first used on line 1/);
    assert.match(reason(6), /difficulty must be light, medium, hard or easy, got "extreme"/);
    assert.match(reason(7), /question is longer than 8000 characters/);
    assert.match(reason(8), /answer contains a NUL character/);
    assert.match(reason(9), /cluster is empty/);
    assert.match(reason(10), /answer is longer than 200 characters/);
    assert.match(reason(11), /not a JSON object/);
  });

  it('refuses an empty file and a set of more than 5,000 questions', () => {
    assert.deepEqual(parseQuestionSet(''), { ok: false, errors: [{ line: 1, reason: 'the file has no questions' }] });
    assert.equal(parseQuestionSet('\n  \n').ok, false);
    const many = Array.from({ length: 5001 }, (_, i) => line({ id: `q${i}` })).join('\n');
    const parsed = parseQuestionSet(many);
    assert.deepEqual(parsed.ok ? [] : parsed.errors, [{ line: 5001, reason: 'more than 5000 questions: a set holds at most 5000' }]);
    assert.equal(parseQuestionSet(many.split('\n').slice(0, 5000).join('\n')).ok, true);
  });
});
