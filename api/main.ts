import { Connection } from '@temporalio/client';
import type { Server } from 'node:http';
import { createDb, REQUEST_PATH_DB_TIMEOUTS } from '../db/knex';
import { loadConfig } from '../infra/config';
import { createLogger } from '../infra/log';
import { createApp } from './app';
import { listen } from './listen';

async function main(): Promise<void> {
  const config = loadConfig();
  const log = createLogger('api');
  if (!config.DATABASE_URL || !config.TEMPORAL_ADDRESS) throw new Error('api needs DATABASE_URL and TEMPORAL_ADDRESS');
  const db = createDb(config.DATABASE_URL, config.QUORUM_DB_POOL_MAX, REQUEST_PATH_DB_TIMEOUTS);
  const temporal = await Connection.connect({ address: config.TEMPORAL_ADDRESS });
  const app = createApp({ db, temporal, namespace: config.TEMPORAL_NAMESPACE, log, form: config.QUORUM_FORM });

  const server: Server = listen(app, config.PORT);
  server.once('listening', () => {
    log.info('api listening', { port: config.PORT });
    process.send?.({ ready: true });
  });

  const stop = (): void => {
    server.close(() => {
      void Promise.all([temporal.close(), db.destroy()]).then(() => process.exit(0));
    });
    server.closeAllConnections();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err: unknown) => {
  createLogger('api').error('api failed', { err });
  process.exit(1);
});
