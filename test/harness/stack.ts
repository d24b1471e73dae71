import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createDb, type Db } from '../../db/knex';
import { prepareDatabase } from '../../db/prepare';
import { startEmbeddedPostgres, type EmbeddedPg } from '../../infra/postgres';
import { resolveTemporalBinary } from '../../infra/temporal-binary';
import { dynamicConfigArgs } from '../../infra/temporal-server';
import { quorumSearchAttributes } from '../../workflows/search-attributes';

/** One real Temporal dev server and one real Postgres for the whole mocha run, on free ports, torn down at the end. */
export interface TestStack {
  db: Db;
  dbUrl: string;
  env: TestWorkflowEnvironment;
  namespace: string;
  temporalBinary: string;
}

let current: TestStack | undefined;
let pg: EmbeddedPg | undefined;
let tmp: string | undefined;

export function stack(): TestStack {
  if (!current) throw new Error('test stack not started: run tests through mocha with test/harness/hooks.ts');
  return current;
}

export async function startStack(): Promise<TestStack> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const temporalBinary = resolveTemporalBinary();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-test-'));
  // Postgres runs as the `postgres` user when we are root: it must be able to enter the folder.
  fs.chmodSync(tmp, 0o755);
  const [postgres, env] = await Promise.all([
    startEmbeddedPostgres(path.join(tmp, 'pg')),
    TestWorkflowEnvironment.createLocal({
      server: {
        executable: { type: 'existing-path', path: temporalBinary },
        searchAttributes: [...quorumSearchAttributes],
        extraArgs: ['--log-level', 'error', ...dynamicConfigArgs()],
      },
    }),
  ]);
  pg = postgres;
  const db = createDb(postgres.url, 20);
  await prepareDatabase(db);
  current = { db, dbUrl: postgres.url, env, namespace: env.namespace ?? 'default', temporalBinary };
  return current;
}

export async function stopStack(): Promise<void> {
  await current?.db.destroy();
  await current?.env.teardown();
  await pg?.stop();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  current = undefined;
}
