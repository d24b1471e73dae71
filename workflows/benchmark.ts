import {
  ApplicationFailure,
  CancellationScope,
  continueAsNew,
  executeChild,
  isCancellation,
  patched,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { BenchmarkActivities, RunLaunch, RunRef } from '../activities/benchmark';
import type { RunAdmission } from '../domain/run-admission';
import type { Form } from '../domain/form';
import type { Tier } from '../domain/modes';
import { endStateOf, type RunSummary } from '../domain/run-summary';
import { emptyCounts, totalQuestions, type RunProgress } from '../domain/runs';
import { workflowIds } from '../domain/workflow-ids';
import { questionWorkflow } from './question';
import { announceRunEnd } from './run-callback';
import { admissionQuery, cancelSignal, progressQuery } from './messages';
import { QuorumStatus } from './search-attributes';

/**
 * One test or certification run (DESIGN §10): one child workflow per question, at most `window` in flight; each
 * child writes its own result, so the run's progress and its crash safety live in Postgres. The run continues as
 * new before its history grows large; `progress` answers while it runs and `cancel` stops it.
 */
export interface BenchmarkInput extends RunRef {
  form: Form;
  /** Questions in flight at once. */
  window: number;
  /** Continue as new past this many history events (a few thousand by default; tests set it low). */
  historyLimit?: number;
  /** Engine calls still out after this long are hedged (see hedge.ts); absent: none are. */
  hedgeAfterMs?: number;
  /**
   * The launch to admit first (its row and charge, issue 26 item 5); absent when a continued run resumes, and in runs
   * launched before the charge became the workflow's step (their API wrote both before starting them).
   */
  launch?: RunLaunch;
  /** Where to POST the signed `run.ended` event once the run ends (issue 28 item 6), with its retries' first wait. */
  callback?: { url: string; retryInitialMs: number };
}

const DEFAULT_HISTORY_LIMIT = 2_000;

/** A question's equal-cost samples, when the run has arms (absent otherwise, so older runs' children start as they did). */
function samplesFor(spec: BenchmarkInput['spec'], tier: Tier): { equalCostSamples?: number } {
  const plan = spec.samplePlans?.find((p) => p.tier === tier);
  return plan ? { equalCostSamples: plan.samples } : {};
}

// Postgres steps: retried until the database is back. Only a run whose engines cannot run (or whose question set
// was changed under it) fails for good, and its charge is refunded. Each try is a few statements (finishRun's
// statistics included: well under a second for 150 questions), so 20 s is a stalled database or a try lost with its
// worker; that try is then retried 20 s on, not a minute (a cancelled run showed `running` that long after a worker
// restart).
const { admitRun, prepareRun, markJudging, finishRun } = proxyActivities<BenchmarkActivities>({
  startToCloseTimeout: '20 seconds',
  retry: {
    initialInterval: '1 second',
    maximumInterval: '30 seconds',
    nonRetryableErrorTypes: ['provider_unavailable', 'invalid_request'],
  },
});

export async function benchmarkWorkflow(input: BenchmarkInput): Promise<RunSummary | null> {
  const progress: RunProgress = {
    state: 'queued',
    done: emptyCounts(),
    total: input.spec.counts,
    failed: 0,
    startedAt: null,
    updatedAt: new Date().toISOString(),
  };
  let cancelled = false;
  const questions = new CancellationScope();
  // A run its API launched before this step existed was admitted by that API.
  let admission: RunAdmission | undefined = input.launch ? undefined : { admitted: true };
  setHandler(admissionQuery, () => admission);
  setHandler(progressQuery, () => progress);
  setHandler(cancelSignal, () => {
    cancelled = true;
    questions.cancel();
  });

  const end = async (
    state: 'completed' | 'failed' | 'cancelled',
    error?: { code: string; message: string },
  ): Promise<RunSummary | null> => {
    const summary = await finishRun({ runId: input.runId, kind: input.kind, state, errorCode: error?.code, errorMessage: error?.message });
    const ended = endStateOf(input.kind, state, summary);
    progress.state = ended;
    upsertSearchAttributes([{ key: QuorumStatus, value: ended }]);
    // After the end is written, so the poll never waits on a receiver; runs launched before callbacks replay without it.
    if (input.callback && patched('run-end-callback')) await announceRunEnd({ runId: input.runId, orgId: input.orgId, ...input.callback });
    return summary;
  };

  if (input.launch) {
    admission = await admitRun(input.launch);
    // Refused, nothing was written: the workflow fails, so the same key may launch again once the refusal is lifted.
    if ('refused' in admission) throw ApplicationFailure.nonRetryable(admission.message, admission.refused);
  }

  let prepared;
  try {
    prepared = await prepareRun(input);
  } catch (err) {
    if (isCancellation(err)) throw err;
    const cause = (err as { cause?: { type?: string; message?: string } }).cause;
    return end('failed', { code: cause?.type ?? 'internal_error', message: cause?.message ?? String(err) });
  }
  if (prepared.ended) return null;
  Object.assign(progress, { state: 'running', done: prepared.done, startedAt: prepared.startedAt, updatedAt: new Date().toISOString() });
  upsertSearchAttributes([{ key: QuorumStatus, value: 'running' }]);

  const queue = [...prepared.remaining];
  const lineups = new Map(prepared.tiers.map((t) => [t.tier, t]));
  const historyLimit = input.historyLimit ?? DEFAULT_HISTORY_LIMIT;
  const parentId = workflowInfo().workflowId;
  const mustContinue = (): boolean => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > historyLimit;

  /** One slot of the window: takes the next question until none is left, the run is cancelled, or history is long. */
  const slot = async (): Promise<void> => {
    for (let q = queue.shift(); q; q = cancelled || mustContinue() ? undefined : queue.shift()) {
      const tierPlan = lineups.get(q.tier);
      if (!tierPlan) throw new Error(`no lineup for tier ${q.tier}`);
      try {
        await executeChild(questionWorkflow, {
          workflowId: workflowIds.question(parentId, q.id),
          args: [
            {
              runId: input.runId,
              orgId: input.orgId,
              form: input.form,
              mode: input.mode,
              question: q,
              tierPlan,
              protocol: input.spec.protocol,
              repeats: input.spec.repeats,
              orderSeed: input.runId,
              hedgeAfterMs: input.hedgeAfterMs,
              ...samplesFor(input.spec, q.tier),
            },
          ],
        });
        progress.done[q.bucket] += 1;
      } catch (err) {
        if (isCancellation(err)) return;
        progress.failed += 1;
      }
      progress.updatedAt = new Date().toISOString();
    }
  };
  await questions.run(() => Promise.all(Array.from({ length: Math.max(1, Math.min(input.window, queue.length)) }, slot)));

  if (cancelled) return end('cancelled');
  // A long run: the in-flight questions have drained; a fresh history picks up what is left (Postgres knows what is done).
  if (queue.length > 0) return continueAsNew<typeof benchmarkWorkflow>({ ...input, launch: undefined });
  progress.state = 'judging';
  await markJudging({ runId: input.runId });
  const answered = totalQuestions(progress.done);
  return end(
    answered > 0 ? 'completed' : 'failed',
    answered > 0 ? undefined : { code: 'upstream_provider_error', message: 'No question could be answered.' },
  );
}
