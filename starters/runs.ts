import type { Client, WorkflowHandle } from '@temporalio/client';
import type { Db } from '../db/knex';
import { doneCounts, type RunRecord } from '../db/repositories/runs';
import { ENDED_STATES, type RunProgress } from '../domain/runs';
import { cancelSignal, progressQuery } from '../workflows/messages';
import type { BenchmarkInput, benchmarkWorkflow } from '../workflows/benchmark';
import { QuorumKind, QuorumMode, QuorumOrg, QuorumStatus } from '../workflows/search-attributes';
import { TASK_QUEUES } from '../workflows/task-queues';

/** A start is one server round trip (milliseconds when healthy). */
const START_DEADLINE_MS = 5_000;

/**
 * Starts a run's workflow under the id its launch recorded (DESIGN §4: `bench/…` or `cert/…` from the idempotency
 * key), on the benchmark queue so long runs never hold a deliberation worker's slots. A second start of the same
 * id is refused by the server (conflict policy FAIL), so a run is never started twice.
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
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
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
