import type { ChildProcess } from 'node:child_process';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createOrganisation, type CreatedOrganisation } from '../../../db/repositories/organisations';
import { workflowIds } from '../../../domain/workflow-ids';
import { assertEachBilledOnce, startProductWorkers } from '../deliberation/helpers';
import { engineCallsOut, exitOf, pause, postCompletion, until, type CompletionReply } from '../../harness/faults';
import { startIsolatedStack, type IsolatedStack } from '../../harness/isolated-stack';
import '../../harness/stack';
import { startApiProcess } from '../../harness/worker';

/**
 * Issue 16: Postgres stopped, and the Temporal dev server killed, while deliberations are in flight, then started
 * again on the same data. On a stack of this file's own: the shared one must outlive it.
 */
describe('faults: Postgres and Temporal restarted mid-deliberation', function () {
  this.timeout(120_000);
  let iso: IsolatedStack;
  let workers: { stop(): Promise<void> } | undefined;
  let api: ChildProcess | undefined;
  let url: string;

  before(async () => {
    iso = await startIsolatedStack();
    // Each engine answers in 1 s: a dependency can go down while the seats are out.
    const [w, a] = await Promise.all([startProductWorkers({ QUORUM_SIM_LATENCY: 'fixed:1000' }, iso), startApiProcess(iso.processEnv())]);
    workers = w;
    api = a.child;
    url = a.url;
  });
  after(async () => {
    if (api && api.exitCode === null && api.signalCode === null) {
      const exit = exitOf(api);
      api.kill('SIGKILL');
      await exit;
    }
    await workers?.stop();
    // Also fails the suite if a Postgres or dev server of this stack is still running.
    await iso?.close();
  });

  async function newOrg(): Promise<CreatedOrganisation> {
    return createOrganisation(iso.db, { name: `Faults ${randomUUID().slice(0, 8)}`, creditMicros: 20_000_000n });
  }

  /** `count` panel calls over HTTP; resolves once every one has its engine calls out. */
  async function callsInFlight(org: CreatedOrganisation, count: number): Promise<{ keys: string[]; answers: Promise<CompletionReply>[] }> {
    const keys = Array.from({ length: count }, () => randomUUID());
    const answers = keys.map((key) => postCompletion(url, org.apiKey, key));
    const running = (key: string): Promise<boolean> => engineCallsOut(iso.client, workflowIds.deliberation(org.orgId, key));
    await until(async () => (await Promise.all(keys.map(running))).every(Boolean), 30_000, 'every call with its seats out');
    return { keys, answers };
  }

  function answered(replies: CompletionReply[]): string[] {
    for (const r of replies) {
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.ok(r.body.choices?.[0]?.message.content);
      assert.equal(r.body.svc?.replayed, undefined, 'answered by its own run, not replayed');
    }
    return replies.map((r) => r.body.svc?.request_id ?? '');
  }

  it('Postgres stopped for 3 s while the seats run: a new call meanwhile is 503, each call in flight answers 200, billed once', async () => {
    const org = await newOrg();
    const { answers } = await callsInFlight(org, 3);

    await iso.stopPostgres();
    const refused = await postCompletion(url, org.apiKey, randomUUID());
    assert.equal(refused.status, 503, JSON.stringify(refused.body));
    assert.equal(refused.body.error?.code, 'service_unavailable');
    await pause(3_000);
    await iso.startPostgres();

    // The seats answered while the database was down; the settle step retried until it came back.
    const requestIds = answered(await Promise.all(answers));
    await assertEachBilledOnce(org.orgId, requestIds, iso.db);
  });

  it('Temporal killed and restarted on its file while the seats run: a call meanwhile is 503 and its retry runs; the calls in flight answer 200, a retry replays; each billed once', async () => {
    const org = await newOrg();
    const { keys, answers } = await callsInFlight(org, 2);

    await iso.killTemporal();
    const startedDuringOutage = randomUUID();
    const refused = await postCompletion(url, org.apiKey, startedDuringOutage);
    assert.equal(refused.status, 503, JSON.stringify(refused.body));
    assert.equal(refused.body.error?.code, 'service_unavailable');
    await iso.startTemporal();

    // The API's client rides out the restart (its calls to Temporal are retried), so the callers just wait.
    const requestIds = answered(await Promise.all(answers));
    const replay = await postCompletion(url, org.apiKey, keys[0]);
    assert.equal(replay.status, 200, JSON.stringify(replay.body));
    assert.equal(replay.body.svc?.replayed, true);
    assert.equal(replay.body.svc?.request_id, requestIds[0]);
    // The call refused during the outage started nothing: its retry runs it, once.
    const retried = await postCompletion(url, org.apiKey, startedDuringOutage);
    requestIds.push(...answered([retried]));
    await assertEachBilledOnce(org.orgId, requestIds, iso.db);
  });
});
