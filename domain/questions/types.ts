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
  /** How the checker reads the reply (check.ts); absent: by the reference's shape (number, date or text). */
  answerKind?: AnswerKind;
  /** A multiple-choice question's options in letter order (A, B, …), as asked: the checker also accepts an option's text. */
  choices?: string[];
  /** A benchmark set's question: the set and the item's id there (domain/questions/benchmark-sets.ts). */
  source?: { set: string; id: string };
}

/** `number`: GSM8K's numeric answer; `choice`: a letter; `yes-no`; `math`: a LaTeX expression, compared normalised. */
export const ANSWER_KINDS = ['number', 'choice', 'yes-no', 'math'] as const;
export type AnswerKind = (typeof ANSWER_KINDS)[number];

/** An id becomes part of a workflow id, so it keeps to characters every id scheme accepts. */
export const QUESTION_ID = /^[A-Za-z0-9._-]{1,64}$/;
