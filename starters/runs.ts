import type { Client, WorkflowHandle } from '@temporalio/client';
import type { Db } from '../db/knex';
import { doneCounts, type RunRecord } from '../db/repositories/runs';
import { ENDED_STATES, type RunProgress } from '../domain/runs';
import type { RunAdmission } from '../domain/run-admission';
import { admissionQuery, cancelSignal, progressQuery } from '../workflows/messages';
import type { BenchmarkInput, benchmarkWorkflow } from '../workflows/benchmark';
import { QuorumKind, QuorumMode, QuorumOrg, QuorumStatus } from '../workflows/search-attributes';
import { TASK_QUEUES } from '../workflows/task-queues';

/** A start is one server round trip (milliseconds when healthy). */
const START_DEADLINE_MS = 5_000;

/**
 * Starts a run's workflow under the id of its launch (DESIGN §4: `bench/…` or `cert/…` from the idempotency key), on
 * the benchmark queue so long runs never hold a deliberation worker's slots. Its first step admits the launch (row and
 * charge). A second start of the same id is refused (conflict policy FAIL) while it runs or after it ran; only a launch
 * whose admission was refused (the workflow failed, nothing written) may start again under its key.
 */
export function startRun(
  client: Client,
  workflowId: string,
  input: BenchmarkInput,
  modeKey: string,
): Promise<WorkflowHandle<typeof benchmarkWorkflow>> {
  return client.withDeadline(Date.now() + START_DEADLINE_MS, () =>
    client.workflow.start<typeof benchmarkWorkflow>('benchmarkWorkflow', {
      taskQueue: TASK_QUEUES.benchmark,
      workflowId,
      workflowIdConflictPolicy: 'FAIL',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
      args: [input],
      typedSearchAttributes: [
        { key: QuorumOrg, value: input.orgId },
        { key: QuorumMode, value: modeKey },
        { key: QuorumKind, value: input.kind },
        { key: QuorumStatus, value: 'queued' },
      ],
      memo: { runId: input.runId, total: input.spec.counts },
    }),
  );
}

/** A launch waits at most this long for its workflow to admit it (one Postgres transaction when healthy). */
const ADMISSION_DEADLINE_MS = 20_000;
const ADMISSION_POLL_MS = 50;

/**
 * The launch's admission, as its workflow's first step decided it. Undefined when it was not decided in time: the
 * workflow still admits it (or not) by itself, and the same key then finds the run, so nothing is lost either way.
 */
export async function awaitAdmission(client: Client, workflowId: string): Promise<RunAdmission | undefined> {
  const handle = client.workflow.getHandle<typeof benchmarkWorkflow>(workflowId);
  const until = Date.now() + ADMISSION_DEADLINE_MS;
  while (Date.now() < until) {
    try {
      const admission = await client.withDeadline(until, () => handle.query(admissionQuery));
      if (admission) return admission;
    } catch {
      // No worker has taken the workflow's first task yet (or the query timed out): ask again until the deadline.
    }
    await new Promise((r) => setTimeout(r, ADMISSION_POLL_MS));
  }
  return undefined;
}

/** A poll waits this long for a live run's progress before reading Postgres instead. */
const PROGRESS_QUERY_DEADLINE_MS = 2_000;

/**
 * A run's progress: from its workflow's query while it is live; from Postgres once it has ended, or when no worker
 * answers in time (the question rows are the truth either way, the query only adds what is in flight).
 */
export async function runProgress(client: Client | undefined, db: Db, run: RunRecord): Promise<RunProgress> {
  const fromDb = async (): Promise<RunProgress> => ({
    state: run.state === 'launching' ? 'queued' : run.state,
    done: await doneCounts(db, run.id),
    total: run.spec.counts,
    failed: 0,
    startedAt: run.startedAt?.toISOString() ?? null,
    updatedAt: run.updatedAt.toISOString(),
  });
  if (!client || ENDED_STATES.includes(run.state)) return fromDb();
  try {
    return await client.withDeadline(Date.now() + PROGRESS_QUERY_DEADLINE_MS, () =>
      client.workflow.getHandle(run.workflowId).query(progressQuery),
    );
  } catch {
    return fromDb();
  }
}

/** Asks a run to stop: questions in flight are cancelled, unanswered ones credited back when it ends. */
export async function cancelRun(client: Client, run: RunRecord): Promise<void> {
  await client.withDeadline(Date.now() + START_DEADLINE_MS, () => client.workflow.getHandle(run.workflowId).signal(cancelSignal));
}
