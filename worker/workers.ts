import {
  DefaultLogger,
  NativeConnection,
  ResourceBasedController,
  Worker,
  bundleWorkflowCode,
  type InjectedSinks,
  type WorkerTuner,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../activities';
import { recordDeliberationEvent } from '../db/repositories/deliberation-events';
import type { DeliberationSinks } from '../workflows/messages';
import { WORKFLOW_SLOTS_DEFAULT, type Config } from '../infra/config';
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
  /** See QUORUM_MIN_WORKFLOW_SLOTS and QUORUM_WORKER_TARGET_CPU; the configuration's defaults when absent. */
  workflowSlots?: { minimum: number; targetCpu: number };
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

/**
 * The worker holds the workflow's activation until its sink calls return: a database that does not answer costs the
 * deliberation at most this per step, and the step's event is lost (its stream ends without it).
 */
const EVENT_WRITE_MS = 1_000;

/** A deliberation's step events (issue 40 item 2), stored as the workflow takes each step; never on replay. */
function eventSinks(deps: ActivityDeps): InjectedSinks<DeliberationSinks> {
  return {
    deliberationEvents: {
      record: {
        fn: async (_info, requestId, index, event) => {
          let timer: NodeJS.Timeout | undefined;
          const late = new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error(`not stored within ${EVENT_WRITE_MS} ms`)), EVENT_WRITE_MS);
          });
          try {
            await Promise.race([recordDeliberationEvent(deps.db, { requestId, index, event }), late]);
          } catch (err) {
            deps.log.warn('deliberation event not stored', { requestId, index, err });
          } finally {
            clearTimeout(timer);
          }
        },
        callDuringReplay: false,
      },
    },
  };
}

/** How the configuration sizes a process's workers: what `npm start` runs, and the benches beside it. */
export function configuredSlots(config: Config): Pick<WorkerOptions, 'maxCachedWorkflows' | 'maxConcurrentActivities' | 'workflowSlots'> {
  return {
    maxCachedWorkflows: config.QUORUM_MAX_CACHED_WORKFLOWS,
    maxConcurrentActivities: config.QUORUM_MAX_CONCURRENT_ACTIVITIES,
    workflowSlots: { minimum: config.QUORUM_MIN_WORKFLOW_SLOTS, targetCpu: config.QUORUM_WORKER_TARGET_CPU },
  };
}

/** The SDK's defaults where we set none: its maximum workflow slots, and its activity slots without a tuner. */
const SDK_MAX_WORKFLOW_SLOTS = 1000;
const SDK_ACTIVITY_SLOTS = 100;

/**
 * Past the minimum, a workflow slot (a deliberation taken on) only while the machine's CPU is under target, and at
 * most one every this long: about what two cores finish a second, so a burst does not take on slots faster than the
 * CPU reading can answer.
 */
const WORKFLOW_SLOT_RAMP = '100 ms';

/**
 * How many workflow tasks the process's workers take on at once: Temporal's resource-based tuner over the machine's
 * CPU (QUORUM_MIN_WORKFLOW_SLOTS says why), one controller for both task queues' workers so they share the target.
 * Activities and local activities keep a fixed count: engine calls wait on providers, not on this CPU.
 */
function workerTuner(
  controller: ResourceBasedController,
  slots: { minimum: number; targetCpu: number },
  maxCachedWorkflows: number | undefined,
  maxConcurrentActivities: number | undefined,
): WorkerTuner {
  const maximumSlots = maxCachedWorkflows ?? SDK_MAX_WORKFLOW_SLOTS;
  const activities = { type: 'fixed-size' as const, numSlots: maxConcurrentActivities ?? SDK_ACTIVITY_SLOTS };
  return {
    workflowTaskSlotSupplier: {
      type: 'resource-based',
      controller,
      minimumSlots: Math.min(slots.minimum, maximumSlots),
      maximumSlots,
      rampThrottle: WORKFLOW_SLOT_RAMP,
    },
    activityTaskSlotSupplier: activities,
    localActivityTaskSlotSupplier: activities,
    // No Nexus services are registered, so none is ever polled for.
    nexusTaskSlotSupplier: { type: 'fixed-size', numSlots: 1 },
  };
}

/** One worker per task queue, same workflows and activities; the deliberation queue is the hot one. */
export async function createWorkers({
  connection,
  namespace,
  deps,
  bundlePath,
  maxCachedWorkflows,
  maxConcurrentActivities,
  workflowSlots = WORKFLOW_SLOTS_DEFAULT,
  shutdownGraceMs,
}: WorkerOptions): Promise<Worker[]> {
  const workflows = bundlePath ? { codePath: bundlePath } : await workflowBundle();
  const activities = createActivities(deps);
  const interceptors = { activity: [metricsInterceptor(deps.engines)] };
  // The machine's memory is not what binds a worker here (its own heap is bounded by the slots): only the CPU target acts.
  const controller = ResourceBasedController.create({ targetCpuUsage: workflowSlots.targetCpu, targetMemoryUsage: 0.95 });
  const tuner = workerTuner(controller, workflowSlots, maxCachedWorkflows, maxConcurrentActivities);
  return Promise.all(
    Object.values(TASK_QUEUES).map((taskQueue) =>
      Worker.create({
        connection,
        namespace,
        taskQueue,
        workflowBundle: workflows,
        activities,
        interceptors,
        sinks: eventSinks(deps),
        maxCachedWorkflows,
        // A deliberation holds its workflow task while its engine calls run inside it (local activities): the tasks
        // at once are the deliberations in flight, bounded by the cache that must hold them all and by the CPU.
        tuner,
        maxHeartbeatThrottleInterval: HEARTBEAT_THROTTLE,
        // The SDK takes a present-but-undefined option for a value (and refuses it): set only when given.
        ...(shutdownGraceMs === undefined
          ? {}
          : { shutdownGraceTime: shutdownGraceMs, shutdownForceTime: shutdownGraceMs + FORCE_AFTER_GRACE_MS }),
      }),
    ),
  );
}
