import type { ChildProcess } from 'node:child_process';
import { Worker } from '@temporalio/worker';
import { randomUUID } from 'node:crypto';
import { forkEntryPoint } from '../../infra/entry-point';
import { stack } from './stack';

/** A worker on a task queue of its own on the test server, for a test that runs its own workflows and activities. */
export async function testWorker(workflowsPath: string, activities: object): Promise<{ worker: Worker; taskQueue: string }> {
  const { env, namespace } = stack();
  const taskQueue = `test-${randomUUID()}`;
  const worker = await Worker.create({ connection: env.nativeConnection, namespace, taskQueue, workflowsPath, activities });
  return { worker, taskQueue };
}

/** What a product process (worker or API) needs to join the test stack; `extra` adds its settings (providers, port). */
export function stackProcessEnv(dataDir: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    DATABASE_URL: stack().dbUrl,
    TEMPORAL_ADDRESS: stack().env.connection.options.address,
    TEMPORAL_NAMESPACE: stack().namespace,
    QUORUM_DATA_DIR: dataDir,
    QUORUM_LOG_LEVEL: 'error',
    ...extra,
  };
}

/** The product's worker entry point as its own OS process, as `npm start` runs it (so a test can SIGKILL it). */
export async function startWorkerProcess(env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  const { child, ready } = forkEntryPoint('worker/main', env, 'ignore');
  await ready;
  return child;
}
