import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { randomUUID } from 'node:crypto';
import { stack } from './stack';

/** A worker on a task queue of its own on the test server, for a test that runs its own workflows and activities. */
export async function testWorker(workflowsPath: string, activities: object): Promise<{ worker: Worker; taskQueue: string }> {
  const { env, namespace } = stack();
  const taskQueue = `test-${randomUUID()}`;
  const worker = await Worker.create({ connection: env.nativeConnection, namespace, taskQueue, workflowsPath, activities });
  return { worker, taskQueue };
}

/** What the product's worker process needs to join the test stack; `extra` adds provider settings. */
export function workerProcessEnv(dataDir: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
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
export function startWorkerProcess(env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  const child = fork(path.join(__dirname, '..', '..', 'worker/main.ts'), [], {
    execArgv: ['--import', 'tsx'],
    env,
    stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('message', () => resolve(child));
    child.once('exit', (code) => reject(new Error(`worker exited (${String(code)}) before it was ready`)));
  });
}
