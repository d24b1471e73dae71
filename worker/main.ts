import { DefaultLogger, NativeConnection, Runtime, makeTelemetryFilterString } from '@temporalio/worker';
import { createDb } from '../db/knex';
import { loadConfig } from '../infra/config';
import { createLogger } from '../infra/log';
import { createWorkers } from './workers';

async function main(): Promise<void> {
  const config = loadConfig();
  const log = createLogger('worker');
  if (!config.DATABASE_URL || !config.TEMPORAL_ADDRESS) throw new Error('worker needs DATABASE_URL and TEMPORAL_ADDRESS');
  // The SDK's own INFO lines (bundler output, state changes) drown ours; warnings and errors still show.
  Runtime.install({ logger: new DefaultLogger('WARN'), telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'WARN' }) } } });

  const db = createDb(config.DATABASE_URL, config.QUORUM_DB_POOL_MAX);
  const connection = await NativeConnection.connect({ address: config.TEMPORAL_ADDRESS });
  const workers = await createWorkers({ connection, namespace: config.TEMPORAL_NAMESPACE, deps: { db, log } });

  // Worker.run() shuts down gracefully on SIGINT/SIGTERM (Runtime's default shutdown signals).
  const running = Promise.all(workers.map((w) => w.run()));
  log.info('worker polling', { taskQueues: workers.map((w) => w.options.taskQueue) });
  process.send?.({ ready: true });
  await running;
  await connection.close();
  await db.destroy();
}

main().catch((err: unknown) => {
  createLogger('worker').error('worker failed', { err });
  process.exit(1);
});
