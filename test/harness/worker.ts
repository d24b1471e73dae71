import type { ChildProcess } from 'node:child_process';
import { Worker } from '@temporalio/worker';
import { randomUUID } from 'node:crypto';
import { forkEntryPoint } from '../../infra/entry-point';
import { freePort } from '../../infra/free-port';
import { stack } from './stack';

/** A worker on a task queue of its own on the test server, for a test that runs its own workflows and activities. */
export async function testWorker(workflowsPath: string, activities: object): Promise<{ worker: Worker; taskQueue: string }> {
  const { env, namespace } = stack();
  const taskQueue = `test-${randomUUID()}`;
  const worker = await Worker.create({ connection: env.nativeConnection, namespace, taskQueue, workflowsPath, activities });
  return { worker, taskQueue };
}

/** Where a product process finds Postgres and Temporal. */
export interface StackAddress {
  dbUrl: string;
  temporalAddress: string;
  namespace: string;
}

/** What a product process (worker or API) needs to join a stack; `extra` adds its settings (providers, port). */
export function processEnvFor(at: StackAddress, dataDir: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    DATABASE_URL: at.dbUrl,
    TEMPORAL_ADDRESS: at.temporalAddress,
    TEMPORAL_NAMESPACE: at.namespace,
    QUORUM_DATA_DIR: dataDir,
    QUORUM_LOG_LEVEL: 'error',
    ...extra,
  };
}

/** What a product process needs to join the shared test stack. */
export function stackProcessEnv(dataDir: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const { dbUrl, env, namespace } = stack();
  return processEnvFor({ dbUrl, temporalAddress: env.connection.options.address, namespace }, dataDir, extra);
}

/** The product's worker entry point as its own OS process, as `npm start` runs it (so a test can SIGKILL it). */
export async function startWorkerProcess(env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  const { child, ready } = forkEntryPoint('worker/main', env, 'ignore');
  await ready;
  return child;
}

/** The product's API entry point as its own OS process on a free port (so a test can SIGKILL it); `env` as above. */
export async function startApiProcess(env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; port: number; url: string }> {
  const port = await freePort();
  const { child, ready } = forkEntryPoint('api/main', { ...env, PORT: String(port) }, 'ignore');
  await ready;
  return { child, port, url: `http://127.0.0.1:${port}` };
}
