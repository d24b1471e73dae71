import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { ANSWER_KINDS, BUCKETS, type Question } from '../domain/questions/types';
import { processSetting } from './config';

/**
 * The converted real benchmark sets, as stack/benchmark-sets.ts wrote them into `QUORUM_BENCHMARK_SETS_DIR`: read
 * once per process on first use (a few MB), checked against the shape the runs rely on.
 */
export const SETS_FILE = 'sets.json';

const SourceSchema = z.object({
  set: z.string(),
  origin: z.string(),
  licence: z.string(),
  split: z.string(),
  questions: z.number().int(),
});
const QuestionSchema = z.object({
  id: z.string(),
  question: z.string(),
  answer: z.string(),
  bucket: z.enum(BUCKETS),
  cluster: z.string(),
  answerKind: z.enum(ANSWER_KINDS).optional(),
  choices: z.array(z.string()).optional(),
  source: z.object({ set: z.string(), id: z.string() }).optional(),
});
export const LibrarySchema = z.object({
  package: z.string(),
  sources: z.array(SourceSchema),
  questions: z.array(QuestionSchema),
});
export type BenchmarkLibrary = z.infer<typeof LibrarySchema> & { questions: Question[] };

let loaded: { dir: string; library: BenchmarkLibrary } | undefined;

/** The installed sets, or undefined when none are installed here (the folder is unset or holds no converted file). */
export function benchmarkLibrary(dir: string | undefined = processSetting('QUORUM_BENCHMARK_SETS_DIR')): BenchmarkLibrary | undefined {
  if (dir === undefined) return undefined;
  if (loaded?.dir === dir) return loaded.library;
  const file = path.join(dir, SETS_FILE);
  if (!fs.existsSync(file)) return undefined;
  const library = LibrarySchema.parse(JSON.parse(fs.readFileSync(file, 'utf8')));
  loaded = { dir, library };
  return library;
}
