import type { ChildProcess } from 'node:child_process';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { exitOf, postCompletion } from '../../harness/faults';
import { parseExposition, total } from '../../harness/prometheus';
import { stackProcessEnv, startApiProcess, startWorkerProcess } from '../../harness/worker';
import { newOrg } from './helpers';

/**
 * Issue 31: `npm start`'s API runs its worker in its own process (QUORUM_ROLE=all) and asks for Eager Workflow Start,
 * so the server hands each deliberation's first workflow task back with the start; an API alone (production) cannot.
 * Read from each API's own `quorum_deliberation_starts_total`, whose `eager` label is the server's answer.
 */
describe('QUORUM_ROLE: the API with its worker starts deliberations eagerly', function () {
  this.timeout(120_000);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-eager-'));
  const children: ChildProcess[] = [];

  after(async () => {
    for (const child of children.filter((c) => c.exitCode === null && c.signalCode === null)) {
      const exit = exitOf(child);
      child.kill('SIGTERM');
      await exit;
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const starts = async (url: string): Promise<{ eager: number; normal: number }> => {
    const exposition = parseExposition(await (await fetch(`${url}/metrics`)).text());
    return {
      eager: total(exposition, 'quorum_deliberation_starts_total', { eager: 'true' }),
      normal: total(exposition, 'quorum_deliberation_starts_total', { eager: 'false' }),
    };
  };

  it('QUORUM_ROLE=all: each call answered, started eagerly; QUORUM_ROLE=api beside a worker process: answered, none eagerly', async () => {
    // No worker metrics port: the suite's processes would contend for the default one.
    const env = stackProcessEnv(dataDir, { QUORUM_WORKER_METRICS_PORT: '0' });
    const org = await newOrg();
    const all = await startApiProcess({ ...env, QUORUM_ROLE: 'all' });
    children.push(all.child);
    for (let i = 0; i < 3; i++) {
      const reply = await postCompletion(all.url, org.ownerKey, randomUUID(), { model: 'QRM:EXPR' });
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
    }
    // Eager start is Temporal's best effort, not a promise: the server answers a start the client retried (a slow
    // reply on a loaded machine) without the task, and Core asks only while the worker has a free slot. CI's sharded
    // suite saw 2 of 3 eager; what must hold is that every start is counted and the role asks (any eager at all).
    const withWorker = await starts(all.url);
    assert.equal(withWorker.eager + withWorker.normal, 3, JSON.stringify(withWorker));
    assert.ok(withWorker.eager >= 1, `an API with its worker starts eagerly: ${JSON.stringify(withWorker)}`);
    // Its worker gone with it, the API alone must rely on a worker process.
    const stopped = exitOf(all.child);
    all.child.kill('SIGTERM');
    await stopped;

    children.push(await startWorkerProcess(env));
    const alone = await startApiProcess({ ...env, QUORUM_ROLE: 'api' });
    children.push(alone.child);
    const reply = await postCompletion(alone.url, org.ownerKey, randomUUID(), { model: 'QRM:EXPR' });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.deepEqual(await starts(alone.url), { eager: 0, normal: 1 });
  });
});
