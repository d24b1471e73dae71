import { seededRandom } from '../prng';

/** A 32-bit FNV-1a hash of a text: turns a seed and a question's coordinates into a generator seed. */
export function hashText(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/** Helpers over one seeded stream (mulberry32 from domain/prng.ts). Every draw advances the stream. */
export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [min, max], both included. */
  int(min: number, max: number): number;
  pick<T>(items: readonly T[]): T;
  /** A shuffled copy. */
  shuffle<T>(items: readonly T[]): T[];
  /** `count` distinct items in random order. */
  sample<T>(items: readonly T[], count: number): T[];
  chance(probability: number): boolean;
}

export function makeRng(seed: number): Rng {
  const next = seededRandom(seed);
  const int = (min: number, max: number): number => min + Math.floor(next() * (max - min + 1));
  const shuffle = <T>(items: readonly T[]): T[] => {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = int(0, i);
      [out[i], out[j]] = [out[j], out[i]];
    }
    return out;
  };
  return {
    next,
    int,
    pick: <T>(items: readonly T[]): T => {
      if (items.length === 0) throw new RangeError('pick from an empty list');
      return items[int(0, items.length - 1)];
    },
    shuffle,
    sample: <T>(items: readonly T[], count: number): T[] => {
      if (count > items.length) throw new RangeError(`sample of ${count} from ${items.length}`);
      return shuffle(items).slice(0, count);
    },
    chance: (probability: number): boolean => next() < probability,
  };
}

/** A stream for a tuple of coordinates (seed, bucket, index, attempt…): the same tuple always gives the same stream. */
export function rngFor(...parts: readonly (string | number)[]): Rng {
  return makeRng(hashText(parts.map(String).join('\u001f')));
}
