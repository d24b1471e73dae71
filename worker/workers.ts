import { DefaultLogger, NativeConnection, Worker, bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../activities';
import { runtimeModule } from '../infra/paths';
import { TASK_QUEUES } from '../workflows/task-queues';
import { metricsInterceptor } from './metrics';

export const workflowsPath = runtimeModule('workflows/index');

let bundle: Promise<WorkflowBundleWithSourceMap> | undefined;

/** Bundled once per process and shared by both task queues' workers (bundling takes seconds). */
export function workflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  bundle ??= bundleWorkflowCode({ workflowsPath, logger: new DefaultLogger('WARN') });
  return bundle;
}

export interface WorkerOptions {
  connection: NativeConnection;
  namespace: string;
  deps: ActivityDeps;
  /** A bundle built beforehand (worker/bundle.ts); without it the workflows are bundled in this process. */
  bundlePath?: string;
  /** See QUORUM_MAX_CACHED_WORKFLOWS; the SDK's default when absent. */
  maxCachedWorkflows?: number;
  /** See QUORUM_MAX_CONCURRENT_ACTIVITIES; the SDK's default when absent. */
  maxConcurrentActivities?: number;
  /** See QUORUM_SHUTDOWN_GRACE_MS; absent, activities in flight are cancelled as soon as shutdown starts (the SDK's default). */
  shutdownGraceMs?: number;
}

/**
 * Heartbeats reach the server at most this far apart (the SDK's default holds them for 80% of the heartbeat timeout,
 * 8 s): a cancelled engine call (a hedge's loser) learns of it at its next heartbeat, every 2 s, and aborts its request.
 */
const HEARTBEAT_THROTTLE = '1 second';

/** Past the grace, cancelled activities get this long to hand back their attempt before the worker stops regardless. */
const FORCE_AFTER_GRACE_MS = 2_000;

/** One worker per task queue, same workflows and activities; the deliberation queue is the hot one. */
export async function createWorkers({
  connection,
  namespace,
  deps,
  bundlePath,
  maxCachedWorkflows,
  maxConcurrentActivities,
  shutdownGraceMs,
}: WorkerOptions): Promise<Worker[]> {
  const workflows = bundlePath ? { codePath: bundlePath } : await workflowBundle();
  const activities = createActivities(deps);
  const interceptors = { activity: [metricsInterceptor(deps.engines)] };
  return Promise.all(
    Object.values(TASK_QUEUES).map((taskQueue) =>
      Worker.create({
        connection,
        namespace,
        taskQueue,
        workflowBundle: workflows,
        activities,
        interceptors,
        maxCachedWorkflows,
        // A deliberation holds its workflow task while its engine calls run inside it (local activities): the tasks
        // at once are the deliberations in flight, bounded by the cache that must hold them all.
        maxConcurrentWorkflowTaskExecutions: maxCachedWorkflows,
        maxConcurrentActivityTaskExecutions: maxConcurrentActivities,
        maxConcurrentLocalActivityExecutions: maxConcurrentActivities,
        maxHeartbeatThrottleInterval: HEARTBEAT_THROTTLE,
        // The SDK takes a present-but-undefined option for a value (and refuses it): set only when given.
        ...(shutdownGraceMs === undefined
          ? {}
          : { shutdownGraceTime: shutdownGraceMs, shutdownForceTime: shutdownGraceMs + FORCE_AFTER_GRACE_MS }),
      }),
    ),
  );
}
