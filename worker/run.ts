import { Client } from '@temporalio/client';
import fs from 'node:fs';
import path from 'node:path';
import { DefaultLogger, Runtime, makeTelemetryFilterString, type NativeConnection } from '@temporalio/worker';
import { createDb } from '../db/knex';
import { warmTokenizer } from '../domain/tokens';
import { createEngines } from '../engines';
import { envLookup, type Config } from '../infra/config';
import { freePort } from '../infra/free-port';
import type { Logger } from '../infra/log';
import { loadSecretBox } from '../infra/secret-box';
import { DEFAULT_HOLD_SWEEP_S, startHoldSweep } from './hold-sweep';
import { DEFAULT_ACCOUNT_EVENTS_POLL_MS, startAccountEventDispatch } from './account-events';
import { ensureUpkeepSchedule } from '../starters/account-events';
import { DEFAULT_CALLBACK_RETRY_MS } from '../domain/webhook-signature';
import { ensureTrialTimers } from '../starters/trial-credit';
import { bundleInChild } from './bundle';
import { serveWorkerMetrics } from './metrics';
import { configuredSlots, createWorkers } from './workers';

/**
 * The SDK's runtime, installed once per process before its first NativeConnection: a worker process's, or an API
 * process that also runs the worker (QUORUM_ROLE=all). Returns the loopback port of Core's metrics exporter, if any.
 */
export async function installWorkerRuntime(config: Config): Promise<number | undefined> {
  // The SDK's own worker metrics come from Core's Prometheus exporter, which binds a port of its own: a loopback
  // one, merged into ours by serveWorkerMetrics, so a worker is one scrape target. Durations in seconds, named so
  // (`_seconds`), as ours are; counters keep the SDK's documented names.
  const corePort = config.QUORUM_WORKER_METRICS_PORT ? await freePort() : undefined;
  // The SDK's own INFO lines (bundler output, state changes) drown ours; warnings and errors still show. Stop
  // requests are ours to handle (onStopRequest: signals, and the supervisor gone), not the SDK's.
  Runtime.install({
    logger: new DefaultLogger('WARN'),
    telemetryOptions: {
      logging: { filter: makeTelemetryFilterString({ core: 'WARN' }) },
      ...(corePort
        ? { metrics: { prometheus: { bindAddress: `127.0.0.1:${corePort}`, useSecondsForDurations: true, unitSuffix: true } } }
        : {}),
    },
    shutdownSignals: [],
  });
  return corePort;
}

export interface RunningWorker {
  /** Stops polling; activities in flight get QUORUM_SHUTDOWN_GRACE_MS, then are cancelled and retried elsewhere. */
  shutdown(): void;
  /** Resolves when every task queue's worker has stopped and the worker's pool is closed. */
  stopped: Promise<void>;
}

/**
 * The workflows and activities on their task queues, polling on `connection` (the caller owns it and closes it after
 * `stopped`): the whole of a worker process, and the worker half of a QUORUM_ROLE=all process.
 */
export async function runWorker(config: Config, log: Logger, connection: NativeConnection, corePort?: number): Promise<RunningWorker> {
  if (!config.DATABASE_URL) throw new Error('the worker needs DATABASE_URL');
  // Built now: production without QUORUM_SECRET_KEY is refused at start, not at the first own-key call.
  const box = loadSecretBox(config, log);
  warmTokenizer();
  const db = createDb(config.DATABASE_URL, config.QUORUM_DB_POOL_MAX);
  const bundlePath = config.QUORUM_WORKFLOW_BUNDLE ?? bundleInChild();
  const workers = await createWorkers({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    // An entry point's own half: the provider keys the engines read by name are looked up here, at start.
    deps: { db, engines: createEngines({ config, variable: envLookup(), logger: log }), log, config, box },
    bundlePath,
    ...configuredSlots(config),
    shutdownGraceMs: config.QUORUM_SHUTDOWN_GRACE_MS,
  });
  // The workers hold the code now; a bundle built for this start only is not kept.
  if (!config.QUORUM_WORKFLOW_BUNDLE) fs.rmSync(path.dirname(bundlePath), { recursive: true, force: true });

  // Organisations created while Temporal was unreachable get their trial timer now.
  const client = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
  const started = await ensureTrialTimers(db, client);
  if (started > 0) log.info('trial timers started', { count: started });
  const sweep = startHoldSweep({ db, client, log }, (config.QUORUM_HOLD_SWEEP_S ?? DEFAULT_HOLD_SWEEP_S) * 1000);
  // Account events (issue 41 item 4): raised events to their delivery workflows; the hourly upkeep's schedule.
  await ensureUpkeepSchedule(client);
  const dispatch = startAccountEventDispatch(
    { db, client, log },
    {
      everyMs: config.QUORUM_ACCOUNT_EVENTS_POLL_MS ?? DEFAULT_ACCOUNT_EVENTS_POLL_MS,
      retryInitialMs: config.QUORUM_CALLBACK_RETRY_MS ?? DEFAULT_CALLBACK_RETRY_MS,
    },
  );

  const metricsPort = config.QUORUM_WORKER_METRICS_PORT;
  if (metricsPort && corePort) {
    const served = await serveWorkerMetrics({
      port: metricsPort,
      token: config.QUORUM_METRICS_TOKEN,
      coreUrl: `http://127.0.0.1:${String(corePort)}/metrics`,
      log,
    });
    if (served) log.info('worker metrics', { url: `http://127.0.0.1:${metricsPort}/metrics` });
  }
  let stopRequested = false;
  const running = Promise.all(workers.map((w) => w.run())).then(
    () => undefined,
    (err: unknown) => {
      // A deliberation's engine calls run inside its workflow task (local activities), which the grace does not
      // cancel: past the grace and its force time the SDK ends the drain with an error. Those tasks then time out on
      // the server and another worker runs them again from their recorded history (nothing lost, billed once). Only a
      // failure before any stop request is a crash.
      if (!stopRequested) throw err;
      log.warn('stopped past the grace: workflow tasks in flight handed back to Temporal', { reason: String(err) });
    },
  );
  log.info('worker polling', { taskQueues: workers.map((w) => w.options.taskQueue) });
  return {
    shutdown: () => {
      stopRequested = true;
      for (const w of workers) w.shutdown();
    },
    stopped: running.finally(() => Promise.all([sweep.stop(), dispatch.stop()])).finally(() => db.destroy()),
  };
}
