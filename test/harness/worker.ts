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
