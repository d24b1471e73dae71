// worker/: the process that runs the workflows and activities on their task queues.
import { Client, Connection } from '@temporalio/client';
import fs from 'node:fs';
import path from 'node:path';
import { DefaultLogger, NativeConnection, Runtime, makeTelemetryFilterString } from '@temporalio/worker';
import { createDb } from '../db/knex';
import { warmTokenizer } from '../domain/tokens';
import { createEngines } from '../engines';
import { loadConfig } from '../infra/config';
import { onStopRequest } from '../infra/entry-point';
import { freePort } from '../infra/free-port';
import { createLogger } from '../infra/log';
import { loadSecretBox } from '../infra/secret-box';
import { temporalConnectOptions } from '../infra/temporal-connection';
import { ensureTrialTimers } from '../starters/trial-credit';
import { bundleInChild } from './bundle';
import { serveWorkerMetrics } from './metrics';
import { createWorkers } from './workers';

async function main(): Promise<void> {
  const config = loadConfig();
  const log = createLogger('worker');
  if (!config.DATABASE_URL || !config.TEMPORAL_ADDRESS) throw new Error('worker needs DATABASE_URL and TEMPORAL_ADDRESS');
  // Refuses production without QUORUM_SECRET_KEY now, not at the first own-key call.
  loadSecretBox(config, log);
  warmTokenizer();
  // The SDK's own worker metrics come from Core's Prometheus exporter, which binds a port of its own: a loopback
  // one, merged into ours by serveWorkerMetrics, so a worker is one scrape target. Durations in seconds, named so
  // (`_seconds`), as ours are; counters keep the SDK's documented names.
  const metricsPort = config.QUORUM_WORKER_METRICS_PORT;
  const corePort = metricsPort ? await freePort() : undefined;
  // The SDK's own INFO lines (bundler output, state changes) drown ours; warnings and errors still show. Stop
  // requests are ours to handle (onStopRequest, below: signals, and the supervisor gone), not the SDK's.
  Runtime.install({
    logger: new DefaultLogger('WARN'),
    telemetryOptions: {
      logging: { filter: makeTelemetryFilterString({ core: 'WARN' }) },
      ...(corePort
        ? {
            metrics: {
              prometheus: { bindAddress: `127.0.0.1:${corePort}`, useSecondsForDurations: true, unitSuffix: true },
            },
          }
        : {}),
    },
    shutdownSignals: [],
  });

  const db = createDb(config.DATABASE_URL, config.QUORUM_DB_POOL_MAX);
  const temporal = temporalConnectOptions(config);
  const connection = await NativeConnection.connect(temporal);
  const bundlePath = config.QUORUM_WORKFLOW_BUNDLE ?? bundleInChild();
  const workers = await createWorkers({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    deps: { db, engines: createEngines({ logger: log }), log },
    bundlePath,
    maxCachedWorkflows: config.QUORUM_MAX_CACHED_WORKFLOWS,
    maxConcurrentActivities: config.QUORUM_MAX_CONCURRENT_ACTIVITIES,
    shutdownGraceMs: config.QUORUM_SHUTDOWN_GRACE_MS,
  });
  // The workers hold the code now; a bundle built for this start only is not kept.
  if (!config.QUORUM_WORKFLOW_BUNDLE) fs.rmSync(path.dirname(bundlePath), { recursive: true, force: true });

  // Organisations created while Temporal was unreachable get their trial timer now.
  const clientConnection = await Connection.connect(temporal);
  const started = await ensureTrialTimers(db, new Client({ connection: clientConnection, namespace: config.TEMPORAL_NAMESPACE }));
  if (started > 0) log.info('trial timers started', { count: started });

  if (metricsPort) {
    const served = await serveWorkerMetrics({
      port: metricsPort,
      token: config.QUORUM_METRICS_TOKEN,
      coreUrl: `http://127.0.0.1:${String(corePort)}/metrics`,
      log,
    });
    if (served) log.info('worker metrics', { url: `http://127.0.0.1:${metricsPort}/metrics` });
  }
  const running = Promise.all(workers.map((w) => w.run()));
  log.info('worker polling', { taskQueues: workers.map((w) => w.options.taskQueue) });
  process.send?.({ ready: true });
  // Draining, the worker polls no more tasks and lets activities in flight finish within the grace; past it they are
  // cancelled and Temporal retries them on another worker.
  onStopRequest(log, config.QUORUM_SHUTDOWN_GRACE_MS, () => {
    for (const w of workers) w.shutdown();
  });
  await running;
  await Promise.all([connection.close(), clientConnection.close()]);
  await db.destroy();
  log.info('worker stopped');
  // The IPC channel, open to hear the supervisor go, would keep the process alive.
  process.exit(0);
}

main().catch((err: unknown) => {
  createLogger('worker').error('worker failed', { err });
  process.exit(1);
});
