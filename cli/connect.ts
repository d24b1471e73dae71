import { Client, Connection } from '@temporalio/client';
import path from 'node:path';
import type { Db } from '../db/knex';
import type { Config } from '../infra/config';
import type { Logger } from '../infra/log';
import { dataDir } from '../infra/paths';
import { openDatabase } from '../operations/open';
import { startEmbeddedPostgres } from '../infra/postgres';
import { temporalConnectOptions } from '../infra/temporal-connection';
import { readStackFile } from '../infra/stack-file';

export interface CliResources {
  db: Db;
  /** A Temporal client when one is reachable, else undefined (callers degrade, e.g. defer the trial timer). */
  temporal(): Promise<Client | undefined>;
  close(): Promise<void>;
}

/**
 * Finds the database as the stack does: `DATABASE_URL`, else the running `npm start`'s, else the local
 * embedded Postgres under `.data/pg`, started for this command only (and prepared, as it may be fresh).
 */
export async function openResources(config: Config, log: Logger): Promise<CliResources> {
  const stackInfo = readStackFile();
  const cleanups: (() => Promise<void>)[] = [];
  let databaseUrl = config.DATABASE_URL ?? stackInfo?.databaseUrl;
  let migrate = false;
  if (!databaseUrl) {
    const pg = await startEmbeddedPostgres(path.join(dataDir, 'pg'));
    cleanups.push(() => pg.stop());
    databaseUrl = pg.url;
    migrate = true;
  }
  const { db, close } = await openDatabase(databaseUrl, { poolMax: 4, use: 'command', prepare: migrate });
  cleanups.unshift(close);

  // TEMPORAL_ADDRESS names a cluster with its TLS and API key; a running `npm start`'s local server needs neither.
  const target = config.TEMPORAL_ADDRESS
    ? temporalConnectOptions(config)
    : stackInfo?.temporalAddress && { address: stackInfo.temporalAddress };
  const namespace = config.TEMPORAL_ADDRESS ? config.TEMPORAL_NAMESPACE : (stackInfo?.namespace ?? config.TEMPORAL_NAMESPACE);
  let client: Promise<Client | undefined> | undefined;
  const connect = async (): Promise<Client | undefined> => {
    if (!target) return undefined;
    try {
      const connection = await Connection.connect({ ...target, connectTimeout: '3 seconds' });
      cleanups.unshift(() => connection.close());
      return new Client({ connection, namespace });
    } catch (err) {
      log.warn('Temporal is not reachable', { address: target.address, err });
      return undefined;
    }
  };

  return {
    db,
    temporal: () => (client ??= connect()),
    async close() {
      for (const cleanup of cleanups) await cleanup();
    },
  };
}
