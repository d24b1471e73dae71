import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createDb, type Db } from '../../db/knex';
import { prepareDatabase } from '../../db/prepare';
import { startEmbeddedPostgres, type EmbeddedPg } from '../../infra/postgres';
import { resolveTemporalBinary } from '../../stack/temporal-binary';
import { dynamicConfigArgs, sqlitePragmaArgs } from '../../stack/temporal-server';
import { quorumSearchAttributes } from '../../workflows/search-attributes';
import { loadConfig } from '../../infra/config';
import { toolEnv } from '../../stack/tool-env';
import { ensureBenchmarkSets } from '../../stack/benchmark-sets';

/**
 * One real Temporal dev server and one real Postgres for the whole mocha run, on free ports, torn down at the end,
 * started only when a loaded test file needs them.
 *
 * How: a test file that needs the stack imports `stack` from this module (directly or through a helper). Mocha loads
 * every test file before it runs any test, and while it loads them its `before`/`after` globals attach hooks to the
 * suite being defined: at a module's top level, outside any `describe`, that is the root suite. So the first import
 * of this module (module evaluation happens once per process) registers a root `before` that starts the stack and a
 * root `after` that stops it; they run once, around all tests of the run. A run of test/unit only (`npm run
 * test:unit`) never imports this module, registers no hook and starts no process (a unit test checks it). Outside mocha (the
 * benches call startStack/stopStack themselves) the globals do not exist and nothing is registered.
 */
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
  if (!current)
    throw new Error(
      'test stack not started: call stack() inside a test or hook of a mocha run (importing test/harness/stack.ts registers the hooks that start it)',
    );
  return current;
}

/**
 * `dbFile`: the Temporal server keeps its SQLite there, with `npm start`'s settings (a bench measuring what `npm start`
 * runs); absent, in memory (the tests).
 */
/** `dbFile`: Temporal's SQLite in that file (else in memory); `metricsPort`: the dev server's Prometheus metrics there. */
export async function startStack(options: { dbFile?: string; metricsPort?: number } = {}): Promise<TestStack> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const tools = toolEnv(loadConfig(), process.env);
  const temporalBinary = resolveTemporalBinary(tools);
  // The real benchmark sets, as `npm start` installs them (no skip: a suite that cannot install them fails and says why).
  process.env.QUORUM_BENCHMARK_SETS_DIR ??= ensureBenchmarkSets(tools);
  // One master key for the run, as one deployment has: the shared database's sealed rows (provider keys, webhook
  // secrets, the authorization server's keys) open in every app, worker and CLI the tests start, whatever their order.
  process.env.QUORUM_SECRET_KEY ??= randomBytes(32).toString('base64');
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-test-'));
  // Postgres runs as the `postgres` user when we are root: it must be able to enter the folder.
  fs.chmodSync(tmp, 0o755);
  const [postgres, env] = await Promise.all([
    startEmbeddedPostgres(path.join(tmp, 'pg')),
    TestWorkflowEnvironment.createLocal({
      server: {
        executable: { type: 'existing-path', path: temporalBinary },
        searchAttributes: [...quorumSearchAttributes],
        dbFilename: options.dbFile,
        extraArgs: [
          '--log-level',
          'error',
          ...dynamicConfigArgs(),
          ...(options.dbFile ? sqlitePragmaArgs() : []),
          ...(options.metricsPort === undefined ? [] : ['--metrics-port', String(options.metricsPort)]),
        ],
      },
    }),
  ]);
  pg = postgres;
  const db = createDb(postgres.url, 20);
  // Known before the migrations run, so a failing migration or seed still gets its servers stopped by the after hook.
  current = { db, dbUrl: postgres.url, env, namespace: env.namespace ?? 'default', temporalBinary };
  await prepareDatabase(db);
  return current;
}

export async function stopStack(): Promise<void> {
  await current?.db.destroy();
  await current?.env.teardown();
  await pg?.stop();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  current = undefined;
}

/** The first start on a machine may build the Temporal binary from Go (minutes). */
const FIRST_START_TIMEOUT_MS = 15 * 60_000;

if (typeof before === 'function' && typeof after === 'function') {
  before('start the test stack (Temporal, Postgres)', async function (this: Mocha.Context) {
    // Registered on a nested suite (this module first imported inside a describe), the stack would stop after
    // that suite while later files still need it: refuse rather than fail confusingly later.
    if (this.test?.parent?.root !== true)
      throw new Error('test/harness/stack.ts must be imported at the top level of a test file, not inside a describe');
    this.timeout(FIRST_START_TIMEOUT_MS);
    await startStack();
  });
  after('stop the test stack', async function (this: Mocha.Context) {
    this.timeout(60_000);
    await stopStack();
  });
}
