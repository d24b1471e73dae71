import type { KeyPrincipal } from './principal';
import { questionResultsPage, questionsForRun, type RunRecord } from '../db/repositories/runs';
import { QUESTION_ID, type Question } from '../domain/questions/types';
import { ENDED_STATES, type QuestionResult, type RunKind } from '../domain/runs';
import type { OperationDeps } from './deps';
import { parseIncludeTranscript } from './receipt';
import { invalidParam, pageLimit, singleParam, type PageSize } from './query-params';
import { findOwnRun } from './run-poll';

/**
 * A run's per-question results (issue 28 item 3): `GET /v1/tests?batch_id=…&include=questions` pages them beside the
 * poll, `format=jsonl` streams them all. Everything is the question's stored row; only the question's text of a row
 * written before it was stored is derived, by the rule the run drew it with. Until the run has ended its rows are
 * sealed (issue 38 item 1): ids, buckets, verdicts and costs show, but no question text, reference answer or answer
 * text, which would reveal the questions of a run still being answered.
 */

/** Questions per page: a certification (150) in two pages at most, with texts still a few hundred KB. */
export const QUESTION_PAGE: PageSize = { default: 50, max: 100 };
/** Rows per read while an export streams. */
const EXPORT_BATCH = 100;

export interface PageOptions {
  includeTranscript: boolean;
  limit: number;
  /** The id of the last question of the previous page (`last_id`). */
  after: string | null;
}

/** What the poll's query asks for beyond the poll itself. */
export type QuestionOptions = { format: 'json'; page: PageOptions | null } | { format: 'jsonl'; includeTranscript: boolean };

/** One question's result and its text (null when a row from before texts were stored can no longer be derived). */
export interface RunQuestionView {
  result: QuestionResult;
  question: string | null;
  /** The run has not ended: the question, its reference answer and the answers' texts are withheld. */
  sealed: boolean;
}

export interface QuestionPageView {
  questions: RunQuestionView[];
  hasMore: boolean;
  includeTranscript: boolean;
}

/** `include`, `include_transcript`, `limit`, `after` and `format` of a poll; each misuse is a 400 naming its parameter. */
export function parseQuestionOptions(query: Readonly<Record<string, unknown>>): QuestionOptions {
  const format = singleParam(query, 'format') ?? 'json';
  const include = singleParam(query, 'include');
  const transcript = singleParam(query, 'include_transcript');
  const limit = singleParam(query, 'limit');
  const after = singleParam(query, 'after');
  if (format !== 'json' && format !== 'jsonl') throw invalidParam('format', '`format` is `json` (the default) or `jsonl`.');
  if (include !== undefined && include !== 'questions')
    throw invalidParam('include', '`include` takes `questions`: the per-question results, paged.');
  if (format === 'jsonl') {
    // The export is every question recorded so far, one a line, so it has no pages.
    const paged = limit !== undefined ? 'limit' : after !== undefined ? 'after' : undefined;
    if (paged) throw invalidParam(paged, `\`format=jsonl\` streams every question; \`${paged}\` pages \`include=questions\` only.`);
    return { format, includeTranscript: parseIncludeTranscript(transcript) };
  }
  if (include === undefined) {
    const stray = ['include_transcript', 'limit', 'after'].find((p) => query[p] !== undefined);
    if (stray) throw invalidParam(stray, `\`${stray}\` applies to the per-question results: add \`include=questions\`.`);
    return { format, page: null };
  }
  return {
    format,
    page: { includeTranscript: parseIncludeTranscript(transcript), limit: pageLimit(limit, QUESTION_PAGE), after: cursor(after) },
  };
}

function cursor(raw: string | undefined): string | null {
  if (raw === undefined) return null;
  if (!QUESTION_ID.test(raw)) throw invalidParam('after', '`after` is a question id: the `last_id` of the previous page.');
  return raw;
}

/**
 * Adds each row's question text. A row written before the result held it gets the text derived as the run drew it
 * (its seed, or its imported set; once per reader), shown only where the derived question still has the row's
 * reference answer, never a guess.
 */
function questionTexts(deps: OperationDeps, run: RunRecord): (rows: QuestionResult[]) => Promise<RunQuestionView[]> {
  let drawn: Promise<Map<string, Question>> | undefined;
  return async (rows) => {
    if (!ENDED_STATES.includes(run.state)) return rows.map((result) => ({ result, question: null, sealed: true }));
    if (rows.some((r) => r.question === undefined))
      drawn ??= questionsForRun(deps.db, run.orgId, run.spec).then(
        (d) => new Map('questions' in d ? d.questions.map((q) => [q.id, q]) : []),
      );
    const byId = drawn && (await drawn);
    return rows.map((result) => {
      const q = byId?.get(result.questionId);
      return { result, question: result.question ?? (q && q.answer === result.reference ? q.question : null), sealed: false };
    });
  };
}

/** One page of the run's questions in recorded order; `after` naming no question of the run is a 400. */
export async function questionPage(deps: OperationDeps, run: RunRecord, options: PageOptions): Promise<QuestionPageView> {
  const rows = await questionResultsPage(deps.db, run.id, { after: options.after, limit: options.limit + 1 });
  if (!rows) throw invalidParam('after', `\`after\` names no recorded question of run \`${run.id}\`.`);
  return {
    questions: await questionTexts(deps, run)(rows.slice(0, options.limit)),
    hasMore: rows.length > options.limit,
    includeTranscript: options.includeTranscript,
  };
}

/**
 * Every question the run has recorded, for `format=jsonl`: the run is looked up (or not found) before anything is
 * sent, then its rows are read a batch at a time as the stream is consumed.
 */
export async function exportQuestions(
  deps: OperationDeps,
  auth: KeyPrincipal,
  kind: RunKind,
  batchId: string,
): Promise<AsyncGenerator<RunQuestionView>> {
  const run = await findOwnRun(deps, auth.orgId, kind, batchId);
  const withTexts = questionTexts(deps, run);
  return (async function* rows(): AsyncGenerator<RunQuestionView> {
    let after: string | null = null;
    for (;;) {
      const batch: QuestionResult[] = (await questionResultsPage(deps.db, run.id, { after, limit: EXPORT_BATCH })) ?? [];
      yield* await withTexts(batch);
      if (batch.length < EXPORT_BATCH) return;
      after = batch[batch.length - 1].questionId;
    }
  })();
}
