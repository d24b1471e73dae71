import type { ConnectionLike } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { Db } from '../../db/knex';
import { TASK_QUEUES } from '../../workflows/task-queues';

export interface HealthDeps {
  db: Db;
  temporal: ConnectionLike;
  namespace: string;
  /** How recent a poll must be for its worker to count as alive; default `POLLER_FRESH_MS`. */
  pollerFreshMs?: number;
}

export interface HealthReport {
  ok: boolean;
  postgres: 'up' | 'down';
  temporal: 'up' | 'down';
  /** Live pollers per task queue (workflow and activity pollers both required). */
  workers: Record<string, number>;
  down: string[];
}

/** The server keeps a poller listed for minutes after it leaves; one older than a long poll (~70 s) is gone. */
export const POLLER_FRESH_MS = 90_000;
const CHECK_TIMEOUT_MS = 3_000;

function withTimeout<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out`)), CHECK_TIMEOUT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function livePollers(deps: HealthDeps, taskQueue: string): Promise<number> {
  const types = [
    temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
  ];
  const counts = await Promise.all(
    types.map(async (taskQueueType) => {
      const res = await deps.temporal.workflowService.describeTaskQueue({
        namespace: deps.namespace,
        taskQueue: { name: taskQueue },
        taskQueueType,
      });
      const now = Date.now();
      return (res.pollers ?? []).filter((p) => {
        const seconds = Number(p.lastAccessTime?.seconds ?? 0);
        return now - seconds * 1000 < (deps.pollerFreshMs ?? POLLER_FRESH_MS);
      }).length;
    }),
  );
  return Math.min(...counts);
}

export async function checkHealth(deps: HealthDeps): Promise<HealthReport> {
  const down: string[] = [];
  const postgres = await withTimeout(deps.db.raw('select 1'), 'postgres').then(
    () => 'up' as const,
    () => 'down' as const,
  );
  if (postgres === 'down') down.push('postgres');

  let temporalState: 'up' | 'down' = 'up';
  const workers: Record<string, number> = {};
  try {
    await withTimeout(deps.temporal.workflowService.describeNamespace({ namespace: deps.namespace }), 'temporal');
    for (const queue of Object.values(TASK_QUEUES)) {
      workers[queue] = await withTimeout(livePollers(deps, queue), 'temporal');
      if (workers[queue] === 0) down.push(`worker:${queue}`);
    }
  } catch {
    temporalState = 'down';
    down.push('temporal');
  }
  return { ok: down.length === 0, postgres, temporal: temporalState, workers, down };
}
