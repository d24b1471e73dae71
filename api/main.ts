import { Client, Connection, type ConnectionLike } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { Server } from 'node:http';
import { envLookup, loadConfig } from '../infra/config';
import { deferredSecretBox } from '../infra/secret-box';
import { createEngines } from '../engines';
import { onStopRequest } from '../infra/entry-point';
import { createLogger } from '../infra/log';
import { openDatabase } from '../operations/open';
import { temporalConnectOptions } from '../infra/temporal-connection';
import { eagerStart } from '../starters/eager-start';
import { installWorkerRuntime, runWorker, type RunningWorker } from '../worker/run';
import { createApp } from './app';
import { drain, listen } from './listen';

async function main(): Promise<void> {
  const config = loadConfig();
  const log = createLogger('api');
  if (!config.DATABASE_URL || !config.TEMPORAL_ADDRESS) throw new Error('api needs DATABASE_URL and TEMPORAL_ADDRESS');
  // Tokens name their issuer and audience from it: guessed from a request's Host header, a forged one could change them.
  if (config.QUORUM_ENV === 'production' && !config.QUORUM_PUBLIC_URL)
    throw new Error('QUORUM_PUBLIC_URL is required when QUORUM_ENV=production (e.g. https://api.example.com)');
  const { db, close: closeDb } = await openDatabase(config.DATABASE_URL, { poolMax: config.QUORUM_DB_POOL_MAX, use: 'request_path' });
  const connectOptions = temporalConnectOptions(config);
  // QUORUM_ROLE=all: the worker polls on the API's own connection, so the client's starts can be eager (see eagerStart).
  let temporal: ConnectionLike;
  let worker: RunningWorker | undefined;
  if (config.QUORUM_ROLE === 'all') {
    const corePort = await installWorkerRuntime(config);
    const native = await NativeConnection.connect(connectOptions);
    worker = await runWorker(config, createLogger('worker'), native, corePort);
    temporal = native;
  } else {
    temporal = await Connection.connect(connectOptions);
  }
  const client = new Client({
    connection: temporal,
    namespace: config.TEMPORAL_NAMESPACE,
    interceptors: worker ? { workflow: [eagerStart] } : undefined,
  });
  const app = createApp({
    db,
    temporal,
    client,
    namespace: config.TEMPORAL_NAMESPACE,
    log,
    form: config.QUORUM_FORM,
    config,
    // The provider keys the engines read by name are looked up here, at start.
    engines: createEngines({ config, variable: envLookup(), logger: log }),
    box: deferredSecretBox(config),
  });

  const server: Server = listen(app, config.PORT);
  server.once('listening', () => {
    log.info('api listening', { port: config.PORT, role: config.QUORUM_ROLE });
    process.send?.({ ready: true });
  });

  // Draining, the API refuses new connections (a load balancer moves on) and lets requests in flight end; their
  // deliberations live in Temporal, so even a request cut off at the deadline is finished and billed once, and a
  // retry with its key replays it. A worker in this process keeps serving them until the API has drained.
  onStopRequest(log, config.QUORUM_SHUTDOWN_GRACE_MS, () => {
    void drain(server, config.QUORUM_SHUTDOWN_GRACE_MS).then(async (cut) => {
      if (cut > 0) log.warn('requests cut off at the shutdown deadline; their deliberations continue', { cut });
      worker?.shutdown();
      await worker?.stopped;
      await Promise.all([temporal.close(), closeDb()]);
      log.info('api stopped');
      process.exit(0);
    });
  });
}

main().catch((err: unknown) => {
  createLogger('api').error('api failed', { err });
  process.exit(1);
});
