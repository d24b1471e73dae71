import { WorkflowNotFoundError } from '@temporalio/client';
import { certificationSpec, ENDED_STATES, type JudgmentRecord, type QuestionResult } from '../../../domain/runs';
import type { Bucket } from '../../../domain/questions/types';
import { JUDGE_SLOTS, type JudgeSlot } from '../../../domain/run-judging';
import { getRun, questionResults } from '../../../db/repositories/runs';
import { randomBytes, randomUUID } from 'node:crypto';
import { seedDemoModes } from '../../../db/seed';
import type { Form } from '../../../domain/form';
import { call, startApi, type Api, type Reply } from '../api/helpers';
import { startProductWorkers } from '../deliberation/helpers';
import type { RunSettings } from '../../../operations/run-settings';
import { stack } from '../../harness/stack';

/** The simulated strong and weak demo modes, owned by `orgId`, under ids and tickers of their own. */
export async function demoModes(orgId: string): Promise<{ strong: Record<Form, string>; weak: Record<Form, string> }> {
  const tag = randomBytes(3).toString('hex').toUpperCase();
  const owner = { idPrefix: `t${tag.toLowerCase()}`, company: `T${tag}` };
  await seedDemoModes(stack().db, orgId, owner);
  return {
    strong: { A: `${owner.idPrefix}-strong-sim`, B: `${owner.company}:STRG` },
    weak: { A: `${owner.idPrefix}-weak-sim`, B: `${owner.company}:WEAK` },
  };
}

/**
 * Resolves when the run's workflow closes, however it ends, when the run is on the shared test stack; otherwise (a
 * stack of a test's own, a bench, no such run) never.
 */
async function workflowClosed(batchId: string): Promise<void> {
  try {
    const run = await getRun(stack().db, batchId);
    await stack()
      .env.client.workflow.getHandle(run.workflowId)
      .result()
      .catch((err: unknown) => {
        if (err instanceof WorkflowNotFoundError) throw err;
      });
  } catch {
    await new Promise<never>(() => undefined);
  }
}

/**
 * Polls a run until it ends (or the deadline passes); returns the last poll. Between polls it waits until the run's
 * workflow closes, at most 2 s (a poller keeps under the key's requests per minute), so a run is seen ended at once.
 */
export async function untilEnded(
  api: Pick<Api, 'url'>,
  key: string,
  kind: 'tests' | 'certify',
  batchId: string,
  deadlineMs = 240_000,
): Promise<Reply> {
  const until = Date.now() + deadlineMs;
  // Waited on once: after it the run's state is written, or about to be.
  let closed: Promise<'closed'> | undefined = workflowClosed(batchId).then(() => 'closed' as const);
  for (;;) {
    const r = await call(api, 'GET', `/v1/${kind}?batch_id=${batchId}`, { key });
    const state = (r.body.batch as { state?: string } | undefined)?.state;
    if (r.status !== 200 && r.status !== 429) return r;
    if ((ENDED_STATES as readonly string[]).includes(state ?? '')) return r;
    if (Date.now() > until) throw new Error(`run ${batchId} still ${state} after ${deadlineMs} ms`);
    // A poller keeps under the key's requests per minute, and waits as told when it does not.
    if (r.status === 429) await new Promise((resolve) => setTimeout(resolve, Number(r.headers.get('retry-after')) * 1000));
    else {
      let timer: NodeJS.Timeout | undefined;
      const waited = new Promise<'waited'>((resolve) => (timer = setTimeout(resolve, 2_000, 'waited' as const)));
      if ((await Promise.race(closed ? [closed, waited] : [waited])) === 'closed') closed = undefined;
      clearTimeout(timer);
    }
  }
}

/**
 * A completed certification's row with a `certified` verdict (or the one given, and then its interval and, when
 * given, its attempt's figures) and the coverage one needs, for a test of what reads verdicts: a row, not a run, so
 * nothing is charged for it (the suite's audit reads it). Its spec is a certification's (plus tier, 150 generated
 * questions). Returns its id.
 */
export async function certifiedRow(row: {
  orgId: string;
  modeId: string;
  ticker: string;
  version: number;
  keyMode?: 'live' | 'test';
  verdict?: {
    verdict: 'certified' | 'provisional' | 'not_certified';
    lowerBound: number;
    upperBound?: number;
    finishedAt: Date;
    attempt?: { attempt: number; alpha: number; adjustedLowerBound: number };
  };
}): Promise<string> {
  const id = randomUUID();
  const v = row.verdict;
  await stack()
    .db('runs')
    .insert({
      id,
      org_id: row.orgId,
      kind: 'certification',
      workflow_id: `cert/${row.orgId}/${randomUUID()}`,
      idempotency_key: randomUUID(),
      fingerprint: 'x',
      key_mode: row.keyMode ?? 'live',
      mode_id: row.modeId,
      mode_version: row.version,
      model: row.ticker,
      spec: JSON.stringify(certificationSpec(1)),
      total_questions: 150,
      billed_micros: 0,
      estimated_minutes: 150,
      state: 'completed',
      summary: JSON.stringify({
        verdict: v?.verdict ?? 'certified',
        coverage: { met: true },
        ...(v ? { overall: { winRate: { interval: { low: v.lowerBound, high: v.upperBound ?? 1 } } } } : {}),
        ...(v?.attempt ? { attempt: { ...v.attempt, verdict: v.verdict } } : {}),
      }),
      // Launched in the order they ended, a second before, so attempts number in the order rows are written.
      created_at: new Date((v?.finishedAt ?? new Date()).getTime() - 1000),
      finished_at: v?.finishedAt ?? new Date(),
    });
  return id;
}

/**
 * What an ended test run with judged questions gives back (issue 38 items 7 and 9), by the rule worked from its rows:
 * the prices kept on the run of the questions no judge's verdict was read on (never recorded, or all verdicts null).
 */
export async function unjudgedPrices(runId: string): Promise<bigint> {
  const { db } = stack();
  const run = await getRun(db, runId);
  const judged = new Set(
    (await questionResults(db, runId)).filter((r) => r.judgments.some((j) => j.verdict !== null)).map((r) => r.questionId),
  );
  const prices = Object.entries(run.spec.questionPrices ?? {});
  if (prices.length === 0) throw new Error(`run ${runId} keeps no question prices`);
  return prices.filter(([id]) => !judged.has(id)).reduce((sum, [, price]) => sum + BigInt(price), 0n);
}

/**
 * A question row as a run's question workflow writes it, for tests that exercise the end step on chosen verdicts: the
 * mode right (`42`), the baseline wrong, and `verdictOf` each judge's verdict at each repeat (null: unreadable).
 */
export function judgedRow(
  questionId: string,
  bucket: Bucket,
  judgments: readonly { slot: JudgeSlot; repeat: number; verdict: JudgmentRecord['verdict'] }[],
): QuestionResult {
  return {
    questionId,
    bucket,
    tier: 'plus',
    cluster: questionId,
    reference: '42',
    modeAnswer: '42',
    baselineAnswer: '41',
    baselineEngine: 'sim/alpha-plus',
    modeCorrect: true,
    baselineCorrect: false,
    judgments: judgments.map((j) => ({ ...j, engineId: `sim/${j.slot}`, order: j.repeat === 1 ? [0, 1] : [1, 0] })),
    recusals: [],
    costMicros: 10,
    latencyMs: 10,
  };
}

/** Every judge on both repeats, each verdict `verdictOf(slot)`. */
export function everyJudge(
  verdictOf: (slot: JudgeSlot) => JudgmentRecord['verdict'],
): { slot: JudgeSlot; repeat: number; verdict: JudgmentRecord['verdict'] }[] {
  return JUDGE_SLOTS.flatMap((slot) => [1, 2].map((repeat) => ({ slot, repeat, verdict: verdictOf(slot) })));
}

/**
 * Both Forms' APIs on the shared stack, with the product's workers, started before a suite's tests and stopped after
 * them; `runs` as the APIs' launch settings (a small window: runs of a few questions finish together).
 */
export function runApis(runs: RunSettings = { testsPerDay: 20, certificationsPerDay: 3, window: 4 }): Record<Form, Api> {
  const apis = {} as Record<Form, Api>;
  let workers: { stop(): Promise<void> } | undefined;
  before(async () => {
    workers = await startProductWorkers();
    for (const form of ['A', 'B'] as const) apis[form] = await startApi(form, { runs });
  });
  after(async () => {
    for (const api of Object.values(apis)) await api.close();
    await workers?.stop();
  });
  return apis;
}
