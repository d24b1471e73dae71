import { z } from 'zod';
import { QUESTION_ID, type Bucket, type Question } from './types';

/** Limits of an imported set: a question is a prompt, an answer a short value the checker compares exactly. */
export const MAX_IMPORTED = 5000;
export const MAX_QUESTION_CHARS = 8000;
export const MAX_ANSWER_CHARS = 200;
export const MAX_CLUSTER_CHARS = 200;

export interface ImportError {
  /** 1-based line of the file. */
  line: number;
  reason: string;
}
export type ParsedQuestionSet = { ok: true; questions: Question[] } | { ok: false; errors: ImportError[] };

/** A required text field: present, a string, not blank, within `max`, no NUL (Postgres text refuses it). */
const text = (max: number): z.ZodType<string> =>
  z
    .string({ error: (issue) => (issue.input === undefined ? 'is missing' : 'must be a string') })
    .trim()
    .min(1, 'is empty')
    .max(max, `is longer than ${max} characters`)
    .refine((s) => !s.includes('\u0000'), 'contains a NUL character');

const LINE = z.object({
  id: z
    .string({ error: (issue) => (issue.input === undefined ? 'is missing' : 'must be a string') })
    .min(1, 'is empty')
    .max(64, 'is longer than 64 characters')
    .regex(QUESTION_ID, 'may use only letters, digits, ".", "_" and "-"'),
  question: text(MAX_QUESTION_CHARS),
  answer: text(MAX_ANSWER_CHARS),
  // Form B calls the light bucket `easy`; both name it.
  difficulty: z.enum(['light', 'medium', 'hard', 'easy'], {
    error: (issue) =>
      issue.input === undefined ? 'is missing' : `must be light, medium, hard or easy, got ${JSON.stringify(issue.input)}`,
  }),
  cluster: text(MAX_CLUSTER_CHARS),
});

/**
 * An organisation's own questions, one JSON object a line: `{id, question, answer, difficulty, cluster}`. Blank lines
 * are skipped. All or nothing: any bad line and no question is returned, and every bad line is reported, so one
 * upload shows every fix needed.
 */
export function parseQuestionSet(text: string): ParsedQuestionSet {
  const errors: ImportError[] = [];
  const questions: Question[] = [];
  const firstLine = new Map<string, number>();
  let count = 0;
  const lines = text.replace(/^\ufeff/, '').split(/\r?\n/);
  for (const [i, raw] of lines.entries()) {
    const line = i + 1;
    if (raw.trim() === '') continue;
    if (++count > MAX_IMPORTED) {
      errors.push({ line, reason: `more than ${MAX_IMPORTED} questions: a set holds at most ${MAX_IMPORTED}` });
      break;
    }
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      errors.push({ line, reason: 'not valid JSON' });
      continue;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      errors.push({ line, reason: 'not a JSON object' });
      continue;
    }
    const parsed = LINE.safeParse(value);
    if (!parsed.success) {
      const reasons = parsed.error.issues.map((issue) => `${issue.path.map(String).join('.')} ${issue.message}`);
      errors.push({ line, reason: reasons.join('; ') });
      continue;
    }
    const q = parsed.data;
    const first = firstLine.get(q.id);
    if (first !== undefined) {
      errors.push({ line, reason: `duplicate id ${JSON.stringify(q.id)}: first used on line ${first}` });
      continue;
    }
    firstLine.set(q.id, line);
    const bucket: Bucket = q.difficulty === 'easy' ? 'light' : q.difficulty;
    questions.push({ id: q.id, question: q.question, answer: q.answer, bucket, cluster: q.cluster });
  }
  if (count === 0) errors.push({ line: 1, reason: 'the file has no questions' });
  return errors.length > 0 ? { ok: false, errors } : { ok: true, questions };
}
