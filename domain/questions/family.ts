import type { Rng } from './rng';
import type { Bucket } from './types';

/** What a template makes; the generator adds the id, bucket, cluster and the `Final answer:` request. */
export interface Drawn {
  question: string;
  answer: string;
}

export interface Template {
  /** Unique within its family: the cluster id is `family.template`. */
  name: string;
  make(rng: Rng, bucket: Bucket): Drawn;
}

export interface Family {
  name: string;
  templates: readonly Template[];
}

/** `a, b and c`. */
export function listed(items: readonly string[]): string {
  return items.length <= 1 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

/** `1 hour`, `3 hours`. */
export function plural(n: number, singular: string, pluralForm = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : pluralForm}`;
}
