/**
 * Known-answer question sets for benchmark runs: the shape the generator, the checker and the JSONL import share.
 * Pure data, so a question crosses workflow boundaries as JSON.
 */
export const BUCKETS = ['light', 'medium', 'hard'] as const;
export type Bucket = (typeof BUCKETS)[number];

export interface Question {
  /** Safe in a workflow id: see {@link QUESTION_ID}. */
  id: string;
  /** The full prompt, ending with the request for a `Final answer: <answer>` line. */
  question: string;
  /** The canonical answer: a number (`42`, `-3`, `6.5`), an ISO date (`2024-03-05`) or a word or short phrase. */
  answer: string;
  bucket: Bucket;
  /** The template the question came from (`family.template`): questions of one template are one statistical cluster. */
  cluster: string;
}

/** An id becomes part of a workflow id, so it keeps to characters every id scheme accepts. */
export const QUESTION_ID = /^[A-Za-z0-9._-]{1,64}$/;
