import type { Context as ActivityContext } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { ActivityInboundCallsInterceptor, ActivityInterceptorsFactory } from '@temporalio/worker';
import http from 'node:http';
import { Counter, Histogram } from 'prom-client';
import { ENGINE_PERMANENT, HEDGE_DECLINED } from '../activities/engine-call';
import type { Engines } from '../engines';
import type { Logger } from '../infra/log';
import { DURATION_BUCKETS, metricsAuthorised, processRegistry } from '../infra/metrics';
import { StepWaits } from './step-waits';

/**
 * The worker process's metrics (README "Metrics"), recorded by an activity interceptor: workflow code stays
 * deterministic and records nothing, activities stay unaware of metrics.
 */
// Deliberately, each metric is declared whole, as prom-client's own examples do (and as operations/metrics.ts and
// api/http/metrics.ts do): a metric's name, help, labels and buckets read best side by side, not through a helper.
const registry = processRegistry();

const stageDuration = new Histogram({
  name: 'quorum_deliberation_stage_duration_seconds',
  help: 'Activity attempts of a deliberation (and a test run question) by stage, lane (unknown before classify decides it) and round',
  labelNames: ['stage', 'lane', 'round'] as const,
  buckets: DURATION_BUCKETS,
  registers: [registry],
});

const engineCalls = new Histogram({
  name: 'quorum_engine_call_duration_seconds',
  help: 'Engine call attempts by engine family and outcome (ok, retryable, permanent, cancelled, declined, error); _count is the calls',
  labelNames: ['family', 'outcome'] as const,
  buckets: DURATION_BUCKETS,
  registers: [registry],
});

const engineOverruns = new Counter({
  name: 'quorum_engine_output_overruns_total',
  help: 'Engine replies longer than the output limit asked for (the server ignored it; billed as served), by engine family',
  labelNames: ['family'] as const,
  registers: [registry],
});

/** Finer than DURATION_BUCKETS under a second: a panel's tail is told apart in tens of milliseconds. */
const WAIT_BUCKETS = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10];

const localDispatch = new Histogram({
  name: 'quorum_local_activity_dispatch_seconds',
  help: "A deliberation's local activity from Core scheduling it to its start in this process (Core's queue, the slot, the event loop)",
  buckets: WAIT_BUCKETS,
  registers: [registry],
});

const turnaround = new Histogram({
  name: 'quorum_deliberation_turnaround_seconds',
  help: "One deliberation's time between a step's end and the next step's schedule, summed (the result through Core, the activation, the workflow thread); observed at its settle",
  buckets: WAIT_BUCKETS,
  registers: [registry],
});

/** Activity types that are a deliberation's stages, and the stage each is reported as. */
const STAGES: Readonly<Record<string, string>> = {
  classify: 'classify',
  prepare: 'prepare',
  ground: 'ground',
  seat: 'seats',
  judge: 'judge',
  synthesize: 'synthesis',
  ballot: 'ballot',
  settle: 'settle',
  failRequest: 'fail',
};

/** Activity types that are one engine call each (activities/engine-call.ts under its several names). */
const ENGINE_CALLS = new Set(['seat', 'judge', 'synthesize', 'ballot', 'runJudge']);

interface StageLabels {
  lane?: unknown;
  round?: unknown;
  engineId?: unknown;
  outcome?: { lane?: unknown };
}

/** The labels the workflow hands every stage's input (`lane`, `round`), or a settle's outcome's lane. */
function labelsOf(arg: unknown): StageLabels {
  return typeof arg === 'object' && arg !== null ? (arg as StageLabels) : {};
}

function laneOf(input: StageLabels): string {
  const lane = input.lane ?? input.outcome?.lane;
  return lane === 'express' || lane === 'panel' ? lane : 'unknown';
}

/** How an engine call attempt ended, from what activities/engine-call.ts throws. */
function callOutcome(failed: boolean, err: unknown, ctx: ActivityContext): string {
  if (!failed) return 'ok';
  if (err instanceof CancelledFailure || ctx.cancellationSignal.aborted) return 'cancelled';
  if (err instanceof ApplicationFailure && err.type === ENGINE_PERMANENT) return 'permanent';
  // A hedged duplicate not sent (the engine does not allow hedging): no call was made.
  if (err instanceof ApplicationFailure && err.type === HEDGE_DECLINED) return 'declined';
  if (err instanceof ApplicationFailure && err.type?.startsWith('Engine_')) return 'retryable';
  return 'error';
}

function overLimit(result: unknown): boolean {
  return typeof result === 'object' && result !== null && 'overLimit' in result && result.overLimit === true;
}

function familyOf(engines: Engines, engineId: unknown): string {
  return (typeof engineId === 'string' && engines.find(engineId)?.family) || 'unknown';
}

/**
 * Times each activity attempt: a histogram observation, nothing more, on the hot path. A deliberation's local
 * activities also tell how long it waited inside the worker between its steps (worker/step-waits.ts).
 */
export function metricsInterceptor(engines: Engines): ActivityInterceptorsFactory {
  const waits = new StepWaits();
  return (ctx) => {
    const type = ctx.info.activityType;
    const stage = STAGES[type];
    if (!stage && !ENGINE_CALLS.has(type)) return {};
    const run = ctx.info.workflowExecution?.runId;
    if (run && !ctx.info.isLocal) waits.remote(run);
    const runId = ctx.info.isLocal ? run : undefined;
    const inbound: ActivityInboundCallsInterceptor = {
      async execute(input, next) {
        const started = performance.now();
        if (runId) localDispatch.observe(waits.started(runId, ctx.info.currentAttemptScheduledTimestampMs, Date.now()) / 1000);
        const stepEnded = (failed: boolean): void => {
          if (!runId) return;
          // A failed settle is retried: the run's last step is the settle (or the failure's record) that succeeds.
          const ran = waits.ended(runId, Date.now(), !failed && (type === 'settle' || type === 'failRequest'));
          if (ran) turnaround.observe(ran.turnaroundMs / 1000);
        };
        const observe = (failed: boolean, err?: unknown): void => {
          stepEnded(failed);
          const seconds = (performance.now() - started) / 1000;
          const labels = labelsOf(input.args[0]);
          if (stage) {
            const round = typeof labels.round === 'number' ? String(labels.round) : undefined;
            stageDuration.observe({ stage, lane: laneOf(labels), ...(round ? { round } : {}) }, seconds);
          }
          if (ENGINE_CALLS.has(type))
            engineCalls.observe({ family: familyOf(engines, labels.engineId), outcome: callOutcome(failed, err, ctx) }, seconds);
        };
        try {
          const result = await next(input);
          observe(false);
          if (ENGINE_CALLS.has(type) && overLimit(result))
            engineOverruns.inc({ family: familyOf(engines, labelsOf(input.args[0]).engineId) });
          return result;
        } catch (err) {
          observe(true, err);
          throw err;
        }
      },
    };
    return { inbound };
  };
}

/** How long a scrape waits for the Temporal SDK's own exporter before serving ours alone. */
const CORE_SCRAPE_TIMEOUT_MS = 2_000;

/**
 * The worker's `/metrics`: ours, then the Temporal SDK's (Core's Prometheus exporter listens on a loopback port of
 * its own, `coreUrl`; merged here so a worker is one scrape target). A port in use is logged and the worker runs
 * on without metrics: they are not worth losing the worker for.
 */
export function serveWorkerMetrics(opts: {
  port: number;
  token?: string;
  coreUrl?: string;
  log: Logger;
}): Promise<http.Server | undefined> {
  const coreMetrics = async (): Promise<string> => {
    if (!opts.coreUrl) return '';
    try {
      const res = await fetch(opts.coreUrl, { signal: AbortSignal.timeout(CORE_SCRAPE_TIMEOUT_MS) });
      if (res.ok) return await res.text();
      opts.log.warn('metrics: the Temporal SDK exporter answered an error', { status: res.status });
    } catch (err) {
      opts.log.warn('metrics: the Temporal SDK exporter did not answer', { err });
    }
    return '';
  };
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    if (!metricsAuthorised(req.headers.authorization, opts.token)) {
      res.writeHead(401, { 'WWW-Authenticate': 'Bearer' }).end('metrics need the scrape token\n');
      return;
    }
    void Promise.all([registry.metrics(), coreMetrics()]).then(
      ([ours, core]) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(ours + core),
      (err: unknown) => {
        opts.log.error('metrics: could not render', { err });
        res.writeHead(500).end();
      },
    );
  });
  return new Promise((resolve) => {
    server.once('error', (err) => {
      opts.log.warn('metrics: cannot listen; the worker runs without them', { port: opts.port, err });
      resolve(undefined);
    });
    server.listen(opts.port, () => resolve(server));
  });
}
