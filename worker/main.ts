// worker/: the process that runs the workflows and activities on their task queues.
import { NativeConnection } from '@temporalio/worker';
import { loadConfig } from '../infra/config';
import { onStopRequest } from '../infra/entry-point';
import { createLogger } from '../infra/log';
import { temporalConnectOptions } from '../infra/temporal-connection';
import { installWorkerRuntime, runWorker } from './run';

async function main(): Promise<void> {
  const config = loadConfig();
  const log = createLogger('worker');
  if (!config.DATABASE_URL || !config.TEMPORAL_ADDRESS) throw new Error('worker needs DATABASE_URL and TEMPORAL_ADDRESS');
  const corePort = await installWorkerRuntime(config);
  const connection = await NativeConnection.connect(temporalConnectOptions(config));
  const worker = await runWorker(config, log, connection, corePort);
  process.send?.({ ready: true });
  // Draining, the worker polls no more tasks and lets activities in flight finish within the grace; past it they are
  // cancelled and Temporal retries them on another worker.
  onStopRequest(log, config.QUORUM_SHUTDOWN_GRACE_MS, () => worker.shutdown());
  await worker.stopped;
  await connection.close();
  log.info('worker stopped');
  // The IPC channel, open to hear the supervisor go, would keep the process alive.
  process.exit(0);
}

main().catch((err: unknown) => {
  createLogger('worker').error('worker failed', { err });
  process.exit(1);
});
