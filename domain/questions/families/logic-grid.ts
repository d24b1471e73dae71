import { listed, type Drawn, type Family } from '../family';
import type { Rng } from '../rng';
import type { Bucket } from '../types';

/**
 * Small logic-grid puzzles: each person has a different value in each category. Clues are drawn true of a hidden
 * solution and added until brute force over every assignment leaves exactly that one, then each clue that is not
 * needed for uniqueness is dropped, so every puzzle has a unique answer and no giveaway surplus.
 */

/** Difficulty: people in the puzzle and categories each of them has a value in (3×1 has 6 assignments, 4×3 has 13,824). */
const PARAMS: Readonly<Record<Bucket, { people: number; categories: number }>> = {
  light: { people: 3, categories: 1 },
  medium: { people: 3, categories: 2 },
  hard: { people: 4, categories: 3 },
};

export interface Category {
  values: readonly string[];
  /** `owns the cat` */
  is: (value: string) => string;
  /** `does not own the cat` */
  isNot: (value: string) => string;
  /** `the owner of the cat` */
  who: (value: string) => string;
  /** `Which pet does Ann own?` */
  ask: (person: string) => string;
  /** `a cat, a dog and a fish` in the introduction. */
  intro: (people: string, values: readonly string[]) => string;
}

export const CATEGORIES: readonly Category[] = [
  {
    values: ['cat', 'dog', 'fish', 'parrot'],
    is: (v) => `owns the ${v}`,
    isNot: (v) => `does not own the ${v}`,
    who: (v) => `the owner of the ${v}`,
    ask: (p) => `Which pet does ${p} own?`,
    intro: (people, values) => `${people} each own a different pet: ${listed(values.map((v) => `a ${v}`))}.`,
  },
  {
    values: ['tea', 'coffee', 'milk', 'juice'],
    is: (v) => `drinks ${v}`,
    isNot: (v) => `does not drink ${v}`,
    who: (v) => `the person who drinks ${v}`,
    ask: (p) => `What does ${p} drink?`,
    intro: (people, values) => `${people} each drink something different: ${listed(values)}.`,
  },
  {
    values: ['red', 'blue', 'green', 'yellow'],
    is: (v) => `wears ${v}`,
    isNot: (v) => `does not wear ${v}`,
    who: (v) => `the person in ${v}`,
    ask: (p) => `What colour does ${p} wear?`,
    intro: (people, values) => `${people} each wear a different colour: ${listed(values)}.`,
  },
];

const NAMES = ['Ann', 'Ben', 'Cara', 'Dev', 'Eli', 'Fay', 'Gus', 'Hana'] as const;

/** Indices throughout: `person` into people, `cat` into categories, `value` into that category's values. */
export type Clue =
  | { kind: 'is'; person: number; cat: number; value: number }
  | { kind: 'not'; person: number; cat: number; value: number }
  | { kind: 'same'; catA: number; valueA: number; catB: number; valueB: number }
  | { kind: 'differ'; catA: number; valueA: number; catB: number; valueB: number };

export interface GridPuzzle {
  people: readonly string[];
  /** How many of each category's values are used: one per person. */
  categories: readonly Category[];
  clues: readonly Clue[];
  /** `assignment[cat][person]` is the value index the person has in that category. */
  solution: Assignment;
}
export type Assignment = readonly (readonly number[])[];

export function clueHolds(clue: Clue, a: Assignment): boolean {
  switch (clue.kind) {
    case 'is':
      return a[clue.cat][clue.person] === clue.value;
    case 'not':
      return a[clue.cat][clue.person] !== clue.value;
    case 'same':
    case 'differ': {
      const person = a[clue.catA].indexOf(clue.valueA);
      return (a[clue.catB][person] === clue.valueB) === (clue.kind === 'same');
    }
  }
}

function permutations(n: number): number[][] {
  if (n === 0) return [[]];
  return permutations(n - 1).flatMap((p) => Array.from({ length: n }, (_, i) => [...p.slice(0, i), n - 1, ...p.slice(i)]));
}

/** Every way to give `people` people one distinct value in each of `categories` categories. */
export function allAssignments(people: number, categories: number): Assignment[] {
  const perms = permutations(people);
  let out: number[][][] = [[]];
  for (let c = 0; c < categories; c++) out = out.flatMap((a) => perms.map((p) => [...a, p]));
  return out;
}

/** Brute force: the assignments that satisfy every clue. */
export function gridSolutions(puzzle: Pick<GridPuzzle, 'people' | 'categories' | 'clues'>): Assignment[] {
  return allAssignments(puzzle.people.length, puzzle.categories.length).filter((a) => puzzle.clues.every((c) => clueHolds(c, a)));
}

function drawClue(rng: Rng, solution: Assignment, people: number): Clue {
  const categories = solution.length;
  const roll = rng.next();
  // Mostly indirect clues: a direct `is` clue settles a person at once and makes the puzzle trivial.
  if (categories > 1 && roll < 0.45) {
    const [catA, catB] = rng.sample(
      Array.from({ length: categories }, (_, i) => i),
      2,
    );
    const person = rng.int(0, people - 1);
    const valueA = solution[catA][person];
    if (rng.chance(0.5)) return { kind: 'same', catA, valueA, catB, valueB: solution[catB][person] };
    const other = rng.pick(Array.from({ length: people }, (_, i) => i).filter((v) => v !== solution[catB][person]));
    return { kind: 'differ', catA, valueA, catB, valueB: other };
  }
  const person = rng.int(0, people - 1);
  const cat = rng.int(0, categories - 1);
  if (roll > 0.85) return { kind: 'is', person, cat, value: solution[cat][person] };
  const value = rng.pick(Array.from({ length: people }, (_, i) => i).filter((v) => v !== solution[cat][person]));
  return { kind: 'not', person, cat, value };
}

export function drawGridPuzzle(rng: Rng, bucket: Bucket): GridPuzzle {
  const p = PARAMS[bucket];
  const people = rng.sample(NAMES, p.people);
  const categories = rng.sample(CATEGORIES, p.categories);
  const all = allAssignments(p.people, p.categories);
  const solution = all[rng.int(0, all.length - 1)];
  let candidates = all;
  const clues: Clue[] = [];
  while (candidates.length > 1) {
    const clue = drawClue(rng, solution, p.people);
    const left = candidates.filter((a) => clueHolds(clue, a));
    if (left.length < candidates.length) {
      clues.push(clue);
      candidates = left;
    }
  }
  for (const clue of rng.shuffle(clues)) {
    const without = clues.filter((c) => c !== clue);
    if (gridSolutions({ people, categories, clues: without }).length === 1) clues.splice(clues.indexOf(clue), 1);
  }
  return { people, categories, clues: rng.shuffle(clues), solution };
}

function clueText(clue: Clue, puzzle: Pick<GridPuzzle, 'people' | 'categories'>): string {
  const value = (cat: number, v: number): string => puzzle.categories[cat].values[v];
  const sentence = (s: string): string => `${s[0].toUpperCase()}${s.slice(1)}.`;
  switch (clue.kind) {
    case 'is':
      return sentence(`${puzzle.people[clue.person]} ${puzzle.categories[clue.cat].is(value(clue.cat, clue.value))}`);
    case 'not':
      return sentence(`${puzzle.people[clue.person]} ${puzzle.categories[clue.cat].isNot(value(clue.cat, clue.value))}`);
    case 'same':
    case 'differ': {
      const b = puzzle.categories[clue.catB];
      const predicate = clue.kind === 'same' ? b.is(value(clue.catB, clue.valueB)) : b.isNot(value(clue.catB, clue.valueB));
      return sentence(`${puzzle.categories[clue.catA].who(value(clue.catA, clue.valueA))} ${predicate}`);
    }
  }
}

function puzzleText(puzzle: GridPuzzle): string {
  const n = puzzle.people.length;
  const people = listed(puzzle.people);
  const intro = puzzle.categories.map((c) => c.intro(people, c.values.slice(0, n))).join(' ');
  const clues = puzzle.clues.map((c, i) => `${i + 1}. ${clueText(c, puzzle)}`).join('\n');
  return `${intro}\nClues:\n${clues}`;
}

/** Who has one value of the first category. */
export function whoQuestion(puzzle: GridPuzzle, value: number): Drawn {
  const first = puzzle.categories[0];
  const who = first.who(first.values[value]);
  return {
    question: `${puzzleText(puzzle)}\nWho is ${who}? Answer with the name only.`,
    answer: puzzle.people[puzzle.solution[0].indexOf(value)],
  };
}

/** One person's value in the last category, so a two-category puzzle must be solved through the links. */
export function whatQuestion(puzzle: GridPuzzle, person: number): Drawn {
  const cat = puzzle.categories.length - 1;
  return {
    question: `${puzzleText(puzzle)}\n${puzzle.categories[cat].ask(puzzle.people[person])} Answer with one word only.`,
    answer: puzzle.categories[cat].values[puzzle.solution[cat][person]],
  };
}

/** A target no `is` clue names outright, when there is one, so the answer takes reasoning rather than reading. */
function target(rng: Rng, puzzle: GridPuzzle, named: (clue: Extract<Clue, { person: number }>) => number): number {
  const direct = new Set(puzzle.clues.flatMap((c) => (c.kind === 'is' ? [named(c)] : [])));
  const all = Array.from({ length: puzzle.people.length }, (_, i) => i);
  const hidden = all.filter((i) => !direct.has(i));
  return rng.pick(hidden.length > 0 ? hidden : all);
}

export const logicGrid: Family = {
  name: 'logic-grid',
  templates: [
    {
      name: 'who',
      make: (rng, bucket) => {
        const puzzle = drawGridPuzzle(rng, bucket);
        return whoQuestion(
          puzzle,
          target(rng, puzzle, (c) => (c.cat === 0 ? c.value : -1)),
        );
      },
    },
    {
      name: 'what',
      make: (rng, bucket) => {
        const puzzle = drawGridPuzzle(rng, bucket);
        const last = puzzle.categories.length - 1;
        return whatQuestion(
          puzzle,
          target(rng, puzzle, (c) => (c.cat === last ? c.person : -1)),
        );
      },
    },
  ],
};
