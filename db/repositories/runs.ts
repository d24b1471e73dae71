import type { Knex } from 'knex';
import { QuorumError } from '../../domain/errors';
import { benchmarkPool, isBenchmarkSetName } from '../../domain/questions/benchmark-sets';
import { generateQuestions } from '../../domain/questions/generate';
import { benchmarkLibrary } from '../../infra/benchmark-sets';
import type { Bucket, Question } from '../../domain/questions/types';
import type { Tier } from '../../domain/modes';
import type { RunSummary } from '../../domain/run-summary';
import {
  emptyCounts,
  ENDED_STATES,
  questionJudged,
  runRefundMicros,
  selectQuestions,
  type BucketCounts,
  type QuestionResult,
  type RunKind,
  type RunSpec,
  type RunState,
} from '../../domain/runs';
import { postAdmitted, postEntries } from './ledger';
import { holdPlanRun } from './plans';
import type { DbOrTrx } from './shared';

/**
 * Runs, their question rows and imported question sets (DESIGN §10). The launch writes the run and its charge in one
 * transaction (the `claimRequest` + `postEntries` pattern of deliberations); every later money movement (a refund of
 * unspent questions) happens once, under the run row's lock.
 */

export interface RunRecord {
  id: string;
  orgId: string;
  kind: RunKind;
  workflowId: string;
  idempotencyKey: string;
  fingerprint: string;
  keyKind: 'live' | 'test';
  modeId: string;
  modeVersion: number;
  model: string;
  spec: RunSpec;
  totalQuestions: number;
  billedMicros: number;
  refundedMicros: number;
  /** A connected app's run: the person whose plan it is billed to (never the organisation's balance); else null. */
  planPersonId: string | null;
  estimatedMinutes: number;
  state: RunState;
  errorCode: string | null;
  errorMessage: string | null;
  summary: RunSummary | null;
  createdAt: Date;
  startedAt: Date | null;
  updatedAt: Date;
  finishedAt: Date | null;
}

interface RunRow {
  id: string;
  org_id: string;
  kind: RunKind;
  workflow_id: string;
  idempotency_key: string;
  fingerprint: string;
  /** The launching key's kind; the column keeps its first name. */
  key_mode: 'live' | 'test';
  mode_id: string;
  mode_version: number;
  model: string;
  spec: RunSpec;
  total_questions: number;
  billed_micros: bigint;
  refunded_micros: bigint;
  plan_person_id: string | null;
  estimated_minutes: number;
  state: RunState;
  error_code: string | null;
  error_message: string | null;
  summary: RunSummary | null;
  created_at: Date;
  started_at: Date | null;
  updated_at: Date;
  finished_at: Date | null;
}

function toRecord(r: RunRow): RunRecord {
  return {
    id: r.id,
    orgId: r.org_id,
    kind: r.kind,
    workflowId: r.workflow_id,
    idempotencyKey: r.idempotency_key,
    fingerprint: r.fingerprint,
    keyKind: r.key_mode,
    modeId: r.mode_id,
    modeVersion: r.mode_version,
    model: r.model,
    spec: r.spec,
    totalQuestions: r.total_questions,
    billedMicros: Number(r.billed_micros),
    refundedMicros: Number(r.refunded_micros),
    planPersonId: r.plan_person_id,
    estimatedMinutes: r.estimated_minutes,
    state: r.state,
    errorCode: r.error_code,
    errorMessage: r.error_message,
    summary: r.summary,
    createdAt: r.created_at,
    startedAt: r.started_at,
    updatedAt: r.updated_at,
    finishedAt: r.finished_at,
  };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export async function findRun(db: DbOrTrx, orgId: string, id: string): Promise<RunRecord | undefined> {
  // Anything but a uuid names no run (and Postgres would refuse to compare it).
  if (!UUID.test(id)) return undefined;
  const row = (await db('runs').where({ id, org_id: orgId }).first()) as RunRow | undefined;
  return row && toRecord(row);
}

export async function getRun(db: DbOrTrx, id: string): Promise<RunRecord> {
  const row = (await db('runs').where({ id }).first()) as RunRow | undefined;
  if (!row) throw new QuorumError('batch_not_found', `no run ${id}`);
  return toRecord(row);
}

export async function findRunByKey(db: DbOrTrx, orgId: string, kind: RunKind, idempotencyKey: string): Promise<RunRecord | undefined> {
  const row = (await db('runs').where({ org_id: orgId, kind, idempotency_key: idempotencyKey }).first()) as RunRow | undefined;
  return row && toRecord(row);
}

/**
 * The newest run in the last 24 hours launched under a derived key (no key of its own) by this API key with this body
 * and mode version: a launch without a key is that run again, across UTC midnight too (issue 38 item 11).
 */
export async function recentDerivedRun(
  db: DbOrTrx,
  input: { orgId: string; apiKeyId: string; kind: RunKind; fingerprint: string; modeVersion: number },
): Promise<RunRecord | undefined> {
  const row = (await db('runs')
    .where({
      org_id: input.orgId,
      api_key_id: input.apiKeyId,
      kind: input.kind,
      fingerprint: input.fingerprint,
      mode_version: input.modeVersion,
    })
    .where('idempotency_key', 'like', 'derived-%')
    .where('created_at', '>', db.raw("now() - interval '1 day'"))
    .orderBy('created_at', 'desc')
    .first()) as RunRow | undefined;
  return row && toRecord(row);
}

/** Which of an organisation's runs a listing shows; absent fields filter nothing. */
export interface RunFilter {
  kinds?: readonly RunKind[];
  /** The `model` the launch named, exactly. */
  model?: string;
  states?: readonly RunState[];
  /** Only runs listed after this one (newest first): the cursor of the page before. */
  after?: string;
}

/** Newest first (the id breaks ties of the same instant, so a cursor never skips or repeats a run). */
export async function listRuns(db: DbOrTrx, orgId: string, limit = 20, filter: RunFilter = {}): Promise<RunRecord[]> {
  const q = db('runs').where({ org_id: orgId });
  if (filter.kinds) q.whereIn('kind', filter.kinds);
  if (filter.model !== undefined) q.where('model', filter.model);
  if (filter.states) q.whereIn('state', filter.states);
  // Compared in Postgres, at its microseconds: a JavaScript Date would round the cursor's instant to milliseconds.
  if (filter.after !== undefined)
    q.whereRaw('(created_at, id) < (select created_at, id from runs where id = ? and org_id = ?)', [filter.after, orgId]);
  const rows = (await q
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(limit)) as RunRow[];
  return rows.map(toRecord);
}

export type NewRun = Omit<
  RunRecord,
  | 'refundedMicros'
  | 'planPersonId'
  | 'state'
  | 'errorCode'
  | 'errorMessage'
  | 'summary'
  | 'createdAt'
  | 'startedAt'
  | 'updatedAt'
  | 'finishedAt'
> & {
  apiKeyId: string;
  /** A connected app's launch: the person whose plan pays (absent in launches recorded before plans paid for runs). */
  planPersonId?: string;
};

export type LaunchResult = { created: true; run: RunRecord } | { created: false; run: RunRecord } | { limited: true };

/**
 * Writes the run and its up-front charge in one transaction, or nothing: a key already used returns that run (the
 * caller compares bodies); a day's launches at `dailyLimit` are refused; a refused charge throws its reason (a
 * billing state's code, else `insufficient_balance`). Launches of one kind by one organisation take turns, so the
 * daily count holds under races. A connected app's run is charged to the person's plan instead (402
 * `plan_limit_reached` past its allowance), under the lock the plan's holds take.
 */
export async function launchRun(db: Knex, run: NewRun, dailyLimit: number): Promise<LaunchResult> {
  return db.transaction(async (trx) => {
    await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [`run-launch|${run.orgId}|${run.kind}`]);
    const existing = await findRunByKey(trx, run.orgId, run.kind, run.idempotencyKey);
    if (existing) return { created: false as const, run: existing };
    if ((await launchesToday(trx, run.orgId, run.kind)) >= dailyLimit) return { limited: true as const };
    const plan = run.planPersonId === undefined ? undefined : await holdPlanRun(trx, run.planPersonId, BigInt(run.billedMicros));
    const [row] = (await trx('runs')
      .insert({
        id: run.id,
        org_id: run.orgId,
        kind: run.kind,
        workflow_id: run.workflowId,
        idempotency_key: run.idempotencyKey,
        fingerprint: run.fingerprint,
        key_mode: run.keyKind,
        api_key_id: run.apiKeyId,
        mode_id: run.modeId,
        mode_version: run.modeVersion,
        model: run.model,
        spec: JSON.stringify(run.spec),
        total_questions: run.totalQuestions,
        billed_micros: String(run.billedMicros),
        ...(plan && { plan_person_id: run.planPersonId, plan_id: plan.planId, plan_period: plan.period }),
        estimated_minutes: run.estimatedMinutes,
        state: 'launching',
      })
      .returning('*')) as RunRow[];
    if (run.billedMicros > 0 && !plan) {
      const amountMicros = BigInt(run.billedMicros);
      await postAdmitted(
        trx,
        run.orgId,
        [{ kind: 'test_run_charge', amountMicros: -amountMicros, requestId: run.id, note: `${run.kind} run ${run.model}` }],
        { kind: 'run', amountMicros },
      );
    }
    return { created: true as const, run: toRecord(row) };
  });
}

/** Launches in the last 24 hours that did start (a launch refused or reconciled before its workflow ran is not counted). */
export async function launchesToday(db: DbOrTrx, orgId: string, kind: RunKind): Promise<number> {
  const row = (await db('runs')
    .where({ org_id: orgId, kind })
    .andWhere('created_at', '>', db.raw("now() - interval '1 day'"))
    .andWhere((q) => q.whereNot('state', 'failed').orWhereNotIn('error_code', ['launch_failed', 'reconciliation_required']))
    .count<{ count: string }[]>('* as count')
    .first()) as { count: string } | undefined;
  return Number(row?.count ?? 0);
}

/** The workflow is running: `launching` → `queued` (a no-op once the workflow has moved it on). */
export async function markRunQueued(db: DbOrTrx, id: string): Promise<void> {
  await db('runs').where({ id, state: 'launching' }).update({ state: 'queued', updated_at: db.fn.now() });
}

/** Moves a live run on; returns when it started (null when it had already ended). */
export async function markRunState(db: DbOrTrx, id: string, state: 'running' | 'judging'): Promise<Date | null> {
  const [row] = (await db('runs')
    .where({ id })
    .whereIn('state', ['launching', 'queued', 'running', 'judging'])
    .update({ state, updated_at: db.fn.now(), started_at: db.raw('coalesce(started_at, now())') })
    .returning('started_at')) as { started_at: Date }[];
  return row?.started_at ?? null;
}

/**
 * Ends a run once: the summary written, and what its end gives back credited (domain/runs.ts `runRefundMicros`: in
 * full without a verdict or any judged question, else the unjudged questions' own prices), judged from the question
 * rows read under the run's lock. A second call changes nothing and returns the run as it ended.
 */
export async function endRun(
  db: Knex,
  id: string,
  end: {
    state: 'completed' | 'incomplete' | 'failed' | 'cancelled';
    summary: RunSummary | null;
    errorCode?: string;
    errorMessage?: string;
  },
): Promise<RunRecord> {
  return db.transaction(async (trx) => {
    const row = (await trx('runs').where({ id }).forUpdate().first()) as RunRow | undefined;
    if (!row) throw new QuorumError('batch_not_found', `no run ${id}`);
    if (ENDED_STATES.includes(row.state)) return toRecord(row);
    const judgedIds = new Set((await questionResults(trx, id)).filter(questionJudged).map((r) => r.questionId));
    const refund = runRefundMicros({
      kind: row.kind,
      state: end.state,
      hasVerdict: (end.summary?.verdict ?? null) !== null,
      billedMicros: Number(row.billed_micros),
      totalQuestions: row.total_questions,
      questionPrices: row.spec.questionPrices,
      judgedIds,
    });
    // A plan's run gives its allowance back by its `refunded_micros` (plan_month_used), the balance was never charged.
    if (refund > 0 && row.plan_person_id === null) {
      const reason = refund === Number(row.billed_micros) ? 'no results, refunded in full' : 'unjudged questions';
      const credited = await postEntries(trx, row.org_id, [
        { kind: 'run_refund', amountMicros: BigInt(refund), requestId: id, note: `${end.state} ${row.kind} run: ${reason}` },
      ]);
      if (!credited) throw new Error(`run ${id}: the refund could not be posted`);
    }
    const [updated] = (await trx('runs')
      .where({ id })
      .update({
        state: end.state,
        summary: end.summary === null ? null : JSON.stringify(end.summary),
        refunded_micros: String(refund),
        error_code: end.errorCode ?? null,
        error_message: end.errorMessage ?? null,
        finished_at: trx.fn.now(),
        updated_at: trx.fn.now(),
        started_at: trx.raw('coalesce(started_at, now())'),
      })
      .returning('*')) as RunRow[];
    return toRecord(updated);
  });
}

/** A launch whose workflow never started: the whole charge credited back, the run failed, once. */
export async function failLaunch(
  db: Knex,
  id: string,
  errorCode: 'launch_failed' | 'reconciliation_required',
  message: string,
): Promise<void> {
  await db.transaction(async (trx) => {
    const row = (await trx('runs').where({ id, state: 'launching' }).forUpdate().first()) as RunRow | undefined;
    if (!row) return;
    const billed = BigInt(row.billed_micros);
    if (billed > 0n && row.plan_person_id === null) {
      const credited = await postEntries(trx, row.org_id, [
        { kind: 'run_refund', amountMicros: billed, requestId: id, note: 'launch did not start' },
      ]);
      if (!credited) throw new Error(`run ${id}: the refund could not be posted`);
    }
    await trx('runs').where({ id }).update({
      state: 'failed',
      refunded_micros: billed.toString(),
      error_code: errorCode,
      error_message: message,
      finished_at: trx.fn.now(),
      updated_at: trx.fn.now(),
    });
  });
}

/** Written by the question's own workflow as it completes; a replayed write changes nothing. */
export async function recordQuestionResult(db: Knex, runId: string, result: QuestionResult): Promise<void> {
  await db.transaction(async (trx) => {
    const inserted = await trx('run_questions')
      .insert({
        run_id: runId,
        question_id: result.questionId,
        bucket: result.bucket,
        tier: result.tier,
        cluster: result.cluster,
        // An organisation that keeps no transcripts (issue 41 item 5): the answers blanked as they are written.
        result: trx.raw(
          '(select case when z then blank_run_answers(j) else j end from (select cast(? as jsonb) j, zero_retention(r.org_id) z from runs r where r.id = ?) v)',
          [JSON.stringify(result), runId],
        ),
        answers_deleted_at: trx.raw('(select case when zero_retention(r.org_id) then now() end from runs r where r.id = ?)', [runId]),
      })
      .onConflict(['run_id', 'question_id'])
      .ignore()
      .returning('question_id');
    if (inserted.length > 0) await trx('runs').where({ id: runId }).update({ updated_at: trx.fn.now() });
  });
}

export async function questionResults(db: DbOrTrx, runId: string): Promise<QuestionResult[]> {
  const rows = (await db('run_questions').where({ run_id: runId }).orderBy('completed_at').select('result')) as {
    result: QuestionResult;
  }[];
  return rows.map((r) => r.result);
}

/**
 * One page of a run's question rows in the order they were recorded (ties by id), after question `after`'s row;
 * undefined when `after` names no question of the run. Recorded order, so a page read while the run is live is
 * followed by the questions that finish later.
 */
export async function questionResultsPage(
  db: DbOrTrx,
  runId: string,
  page: { after: string | null; limit: number },
): Promise<QuestionResult[] | undefined> {
  const q = db('run_questions')
    .where({ run_id: runId })
    .orderBy([{ column: 'completed_at' }, { column: 'question_id' }])
    .limit(page.limit)
    .select('result');
  if (page.after !== null) {
    if (!(await db('run_questions').where({ run_id: runId, question_id: page.after }).first('question_id'))) return undefined;
    // Compared in SQL: completed_at has microseconds, which a JavaScript Date would round away.
    q.whereRaw('(completed_at, question_id) > (select completed_at, question_id from run_questions where run_id = ? and question_id = ?)', [
      runId,
      page.after,
    ]);
  }
  return ((await q) as { result: QuestionResult }[]).map((r) => r.result);
}

export async function answeredIds(db: DbOrTrx, runId: string): Promise<Set<string>> {
  const rows = (await db('run_questions').where({ run_id: runId }).select('question_id')) as { question_id: string }[];
  return new Set(rows.map((r) => r.question_id));
}

export async function doneCounts(db: DbOrTrx, runId: string): Promise<BucketCounts> {
  const rows = (await db('run_questions').where({ run_id: runId }).groupBy('bucket').select('bucket').count('* as n')) as {
    bucket: Bucket;
    n: string;
  }[];
  const counts = emptyCounts();
  for (const r of rows) counts[r.bucket] = Number(r.n);
  return counts;
}

/**
 * The newest completed live run of a mode version: the estimate's evidence (DESIGN §10). A test key's run answered
 * on `sim` engines and is never evidence; a run of another version measured another panel; a run short of the
 * coverage a verdict needs (domain/run-summary.ts) is not evidence either. Without `modeVersion`, the mode's
 * current release.
 */
export async function latestRunSummary(
  db: DbOrTrx,
  modeId: string,
  modeVersion?: number,
): Promise<{ runId: string; summary: RunSummary } | undefined> {
  const q = db('runs as r')
    .where({ 'r.mode_id': modeId, 'r.state': 'completed', 'r.key_mode': 'live' })
    .whereRaw("(r.summary->'coverage'->>'met')::boolean is true")
    .orderBy('r.finished_at', 'desc');
  if (modeVersion !== undefined) q.where('r.mode_version', modeVersion);
  else
    q.join('modes as m', function () {
      this.on('m.id', '=', 'r.mode_id').andOn('m.current_version', '=', 'r.mode_version');
    });
  const row = (await q.first('r.id', 'r.summary')) as { id: string; summary: RunSummary } | undefined;
  return row && { runId: row.id, summary: row.summary };
}

export interface QuestionSetRecord {
  id: string;
  orgId: string;
  name: string;
  size: number;
  createdAt: Date;
}

export async function saveQuestionSet(db: DbOrTrx, set: { id: string; orgId: string; name: string; questions: Question[] }): Promise<void> {
  await db('question_sets').insert({
    id: set.id,
    org_id: set.orgId,
    name: set.name,
    size: set.questions.length,
    questions: JSON.stringify(set.questions),
  });
}

async function questionSetOf(db: DbOrTrx, orgId: string, id: string): Promise<Question[] | undefined> {
  const row = (await db('question_sets').where({ id, org_id: orgId }).first('questions')) as { questions: Question[] } | undefined;
  return row?.questions;
}

/**
 * A run's questions, the same at launch and in its workflow: generated from its seed, or drawn (seeded) from a
 * benchmark set installed here or the organisation's imported set. `missing` says why there are none: no such set, the benchmark sets are not installed here, or too few of
 * some difficulty.
 */
export async function questionsForRun(
  db: DbOrTrx,
  orgId: string,
  spec: RunSpec,
): Promise<{ questions: Question[] } | { missing: 'set' | 'questions' | 'installed' }> {
  if (spec.questionSetId === null) return { questions: generateQuestions(spec.seed, spec.counts) };
  if (isBenchmarkSetName(spec.questionSetId)) {
    const library = benchmarkLibrary();
    if (!library) return { missing: 'installed' };
    const drawn = selectQuestions(benchmarkPool(library.questions, spec.questionSetId), spec.counts, spec.seed);
    return drawn ? { questions: drawn } : { missing: 'questions' };
  }
  const pool = await questionSetOf(db, orgId, spec.questionSetId);
  if (!pool) return { missing: 'set' };
  const picked = selectQuestions(pool, spec.counts, spec.seed);
  return picked ? { questions: picked } : { missing: 'questions' };
}

/**
 * Every judged question of an organisation's live runs of one mode version, pooled for the advisor: each question
 * keyed by its run too, so two runs' questions never share a cluster. Newest runs first, with the runs they came
 * from. A test key's run answered on `sim` engines and is never evidence (DESIGN §10).
 */
export async function modeVersionResults(
  db: DbOrTrx,
  input: { orgId: string; modeId: string; modeVersion: number },
): Promise<{ runs: Pick<RunRecord, 'id' | 'kind' | 'state'>[]; results: QuestionResult[] }> {
  const rows = (await db('run_questions as q')
    .join('runs as r', 'r.id', 'q.run_id')
    .where({ 'r.org_id': input.orgId, 'r.mode_id': input.modeId, 'r.mode_version': input.modeVersion, 'r.key_mode': 'live' })
    .orderBy([
      { column: 'r.created_at', order: 'desc' },
      { column: 'q.completed_at', order: 'asc' },
    ])
    .select('r.id', 'r.kind', 'r.state', 'q.result')) as { id: string; kind: RunKind; state: RunState; result: QuestionResult }[];
  const runs = new Map<string, Pick<RunRecord, 'id' | 'kind' | 'state'>>();
  for (const r of rows) runs.set(r.id, { id: r.id, kind: r.kind, state: r.state });
  return { runs: [...runs.values()], results: rows.map((r) => ({ ...r.result, questionId: `${r.id}/${r.result.questionId}` })) };
}

/** Questions answered so far in each of these runs (a run with none is absent). */
export async function answeredCounts(db: DbOrTrx, runIds: readonly string[]): Promise<Map<string, number>> {
  if (runIds.length === 0) return new Map();
  const rows = (await db('run_questions').whereIn('run_id', runIds).groupBy('run_id').select('run_id').count('* as n')) as {
    run_id: string;
    n: string;
  }[];
  return new Map(rows.map((r) => [r.run_id, Number(r.n)]));
}

/**
 * What the mode version (all of it, and its seats alone) and its baseline cost per question on one tier, as recorded
 * by the organisation's earlier runs of this key kind (a test key's are `sim` engines, a live key's real ones): the
 * means the equal-cost arms' k is chosen from (issue 39 item 2, issue 52 item 2), over questions that recorded them.
 */
export async function recordedQuestionCosts(
  db: DbOrTrx,
  input: { orgId: string; modeId: string; modeVersion: number; keyMode: 'live' | 'test'; tier: Tier },
): Promise<{ questions: number; modeMicros: number; modeSeatsMicros: number; baselineMicros: number }> {
  const row = (await db('run_questions as q')
    .join('runs as r', 'r.id', 'q.run_id')
    .where({ 'r.org_id': input.orgId, 'r.mode_id': input.modeId, 'r.mode_version': input.modeVersion, 'r.key_mode': input.keyMode })
    .where('q.tier', input.tier)
    .whereRaw(`(q.result->'costs'->>'baselineMicros')::numeric > 0`)
    .first(
      db.raw('count(*)::int as questions'),
      db.raw(`coalesce(avg((q.result->'costs'->>'modeMicros')::numeric), 0)::float8 as mode`),
      db.raw(`coalesce(avg((q.result->'costs'->>'modeSeatsMicros')::numeric), 0)::float8 as seats`),
      db.raw(`coalesce(avg((q.result->'costs'->>'baselineMicros')::numeric), 0)::float8 as baseline`),
    )) as { questions: number; mode: number; seats: number; baseline: number };
  return {
    questions: row.questions,
    modeMicros: Math.round(row.mode),
    modeSeatsMicros: Math.round(row.seats),
    baselineMicros: Math.round(row.baseline),
  };
}
