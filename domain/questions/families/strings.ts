import { listed, type Drawn, type Family } from '../family';
import type { Rng } from '../rng';
import type { Bucket } from '../types';

/** Difficulty: how many transformations are chained, how many words a text has, how many letters are counted or picked. */
const PARAMS: Readonly<Record<Bucket, { ops: number; words: number; letters: number; pick: 'first' | 'second' | 'last-but-one' }>> = {
  light: { ops: 1, words: 1, letters: 1, pick: 'first' },
  medium: { ops: 2, words: 4, letters: 1, pick: 'second' },
  hard: { ops: 3, words: 7, letters: 2, pick: 'last-but-one' },
};

/** Lower-case words only: the checker ignores case, so no answer may hinge on it. */
const WORDS = [
  'planet',
  'garden',
  'window',
  'silver',
  'marble',
  'orchid',
  'canyon',
  'lantern',
  'harvest',
  'compass',
  'blanket',
  'thunder',
  'meadow',
  'pocket',
  'violin',
  'cobalt',
  'falcon',
  'glacier',
  'monsoon',
  'quartz',
  'saddle',
  'timber',
  'walrus',
  'zephyr',
] as const;

export type StringOp = { op: 'reverse' } | { op: 'drop-vowels' } | { op: 'shift'; by: number } | { op: 'sort' } | { op: 'swap-ends' };

const OP_TEXT = (o: StringOp): string => {
  switch (o.op) {
    case 'reverse':
      return 'reverse the order of the letters';
    case 'drop-vowels':
      return 'remove every vowel (a, e, i, o, u)';
    case 'shift':
      return `replace every letter by the one ${o.by} place${o.by === 1 ? '' : 's'} later in the alphabet (z wraps around to a)`;
    case 'sort':
      return 'sort the letters into alphabetical order';
    case 'swap-ends':
      return 'swap the first and the last letter';
  }
};

export function applyOp(word: string, o: StringOp): string {
  switch (o.op) {
    case 'reverse':
      return [...word].reverse().join('');
    case 'drop-vowels':
      return word.replace(/[aeiou]/g, '');
    case 'shift':
      return word.replace(/[a-z]/g, (c) => String.fromCharCode(((c.charCodeAt(0) - 97 + o.by) % 26) + 97));
    case 'sort':
      return [...word].sort().join('');
    case 'swap-ends':
      return word.length < 2 ? word : `${word[word.length - 1]}${word.slice(1, -1)}${word[0]}`;
  }
}

export function pipelineQuestion(word: string, ops: readonly StringOp[]): Drawn {
  const steps = ops.map((o, i) => `${i + 1}. ${OP_TEXT(o)}`).join('\n');
  return {
    question: `Start with the word "${word}" and apply these steps in order:\n${steps}\nWhat is the result? Answer with the letters only.`,
    answer: ops.reduce(applyOp, word),
  };
}

function drawOps(rng: Rng, count: number): StringOp[] {
  // Dropping vowels twice or sorting twice would be a wasted step: each kind appears at most once.
  const kinds = rng.sample(['reverse', 'drop-vowels', 'shift', 'sort', 'swap-ends'] as const, count);
  return kinds.map((op): StringOp => (op === 'shift' ? { op, by: rng.int(1, 5) } : { op }));
}

export function letterCountQuestion(text: string, letters: readonly string[]): Drawn {
  const count = [...text].filter((c) => letters.includes(c)).length;
  const question =
    letters.length === 1
      ? `How many times does the letter "${letters[0]}" appear in "${text}"?`
      : `How many times do the letters ${listed(letters.map((l) => `"${l}"`))} appear in "${text}", all counted together?`;
  return { question: `${question} Answer with the number only.`, answer: String(count) };
}

const PICK_TEXT = { first: 'the first letter', second: 'the second letter', 'last-but-one': 'the second-to-last letter' } as const;

export function pickLettersQuestion(words: readonly string[], pick: keyof typeof PICK_TEXT): Drawn {
  const letter = (w: string): string => (pick === 'first' ? w[0] : pick === 'second' ? w[1] : w[w.length - 2]);
  return {
    question: `Take ${PICK_TEXT[pick]} of each word in "${words.join(' ')}", in order, and join them into one string. What string do you get? Answer with the letters only.`,
    answer: words.map(letter).join(''),
  };
}

export const strings: Family = {
  name: 'strings',
  templates: [
    { name: 'pipeline', make: (rng, bucket) => pipelineQuestion(rng.pick(WORDS), drawOps(rng, PARAMS[bucket].ops)) },
    {
      name: 'letter-count',
      make: (rng, bucket) => {
        const p = PARAMS[bucket];
        const text = rng.sample(WORDS, p.words).join(' ');
        // Counted letters are drawn from the text, so the answer is never a trivial zero.
        const letters = rng.sample([...new Set(text.replace(/ /g, ''))], p.letters);
        return letterCountQuestion(text, letters);
      },
    },
    {
      name: 'pick-letters',
      make: (rng, bucket) => {
        const p = PARAMS[bucket];
        return pickLettersQuestion(rng.sample(WORDS, Math.max(3, p.words)), p.pick);
      },
    },
  ],
};
