/**
 * Issue 16's fault tests, each asserting that nothing is lost and nothing is billed twice:
 * - the worker SIGKILLed mid-deliberation, the call completing on a new one: test/stack/deliberation/durability.test.ts
 *   (and under `npm start`, which restarts it: test/stack/launcher/supervisor.test.ts);
 * - the API SIGKILLed while a client waits: this file;
 * - Postgres stopped, the Temporal dev server killed, mid-run: dependencies.test.ts;
 * - a provider down, then slow, then back: provider-outage.test.ts;
 * - 200 concurrent calls against a balance that covers 20: overload.test.ts;
 * - SIGTERM (graceful shutdown) of the API and the worker: graceful-shutdown.test.ts.
 */
import type { ChildProcess } from 'node:child_process';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { workflowIds } from '../../../domain/workflow-ids';
import { newOrg } from '../api/helpers';
import { assertEachBilledOnce, requestState, startProductWorkers } from '../deliberation/helpers';
import { engineCallsOut, exitOf, listProcesses, pause, postCompletion, until, type CompletionReply } from '../../harness/faults';
import { stack } from '../../harness/stack';
import { stackProcessEnv, startApiProcess } from '../../harness/worker';

describe('faults: the API killed while a client waits', function () {
  this.timeout(60_000);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-api-crash-'));
  const apis: ChildProcess[] = [];
  let workers: { stop(): Promise<void> } | undefined;

  before(async () => {
    // Engines answer in 1.5 s: the panel (seats, judge, synthesis) is still running when the client comes back.
    workers = await startProductWorkers({ QUORUM_SIM_LATENCY: 'fixed:1500' });
  });
  after(async () => {
    for (const api of apis.filter((a) => a.exitCode === null && a.signalCode === null)) {
      const exit = exitOf(api);
      api.kill('SIGKILL');
      await exit;
    }
    await workers?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
    const pids = new Set(apis.map((a) => a.pid));
    assert.deepEqual(
      listProcesses().filter((p) => pids.has(p.pid)),
      [],
    );
  });

  it('the retry with the same Idempotency-Key gets 409 request_in_progress while the run is live, then the replay; billed once', async () => {
    // Two API processes behind one address, as a load balancer sees them: the client's retry reaches the live one.
    const [dying, live] = await Promise.all([startApiProcess(stackProcessEnv(dataDir)), startApiProcess(stackProcessEnv(dataDir))]);
    apis.push(dying.child, live.child);
    const org = await newOrg();
    const key = randomUUID();
    // Its connection dies with the API (the handler is attached now, before the rejection comes).
    const lost = assert.rejects(postCompletion(dying.url, org.ownerKey, key));
    const workflowId = workflowIds.deliberation(org.orgId, key);
    await until(async () => engineCallsOut(stack().env.client, workflowId), 30_000, 'the seats running');

    const exit = exitOf(dying.child);
    dying.child.kill('SIGKILL');
    await exit;
    await lost;

    const busy = await postCompletion(live.url, org.ownerKey, key);
    assert.equal(busy.status, 409, JSON.stringify(busy.body));
    assert.equal(busy.body.error?.code, 'request_in_progress');
    assert.equal(await requestState(org.orgId, key), 'running');
    const requestId = busy.body.svc?.request_id;
    assert.ok(requestId, 'the 409 names the running call');

    // The client retries until the call is no longer in progress (twice a second: the key's rate limit is 60 a minute).
    let reply: CompletionReply = busy;
    for (const deadline = Date.now() + 30_000; reply.status === 409 && Date.now() < deadline;) {
      await pause(500);
      reply = await postCompletion(live.url, org.ownerKey, key);
    }
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.ok(reply.body.choices?.[0]?.message.content);
    assert.equal(reply.body.svc?.replayed, true);
    assert.equal(reply.body.svc?.request_id, requestId);
    await assertEachBilledOnce(org.orgId, [requestId]);
  });
});
