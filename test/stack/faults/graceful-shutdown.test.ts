import type { ChildProcess } from 'node:child_process';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { workflowIds } from '../../../domain/workflow-ids';
import { newOrg as newApiOrg, PANEL } from '../api/helpers';
import { chargeCount, customMode, deliberate, newOrg, requestState, startProductWorkers } from '../deliberation/helpers';
import { activitiesRunning, exitOf, portOpen, until } from '../../harness/faults';
import { stack } from '../../harness/stack';
import { stackProcessEnv, startApiProcess, startWorkerProcess } from '../../harness/worker';

const EventType = temporal.api.enums.v1.EventType;
const SIM_SEATS = ['sim/alpha-plus', 'sim/beta-plus', 'sim/gamma-plus'];

/**
 * The engine calls (activities) of a deliberation as its history tells them: the last attempt of each (an attempt that failed and
 * was retried leaves no event), who started it and how it ended.
 */
async function engineCalls(workflowId: string): Promise<{ attempt: number; identity: string; ended: string }[]> {
  const events = (await stack().env.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const endOf = new Map<string, string>();
  for (const e of events) {
    const ended = e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes ?? e.activityTaskTimedOutEventAttributes;
    if (ended) endOf.set(String(ended.startedEventId), EventType[e.eventType ?? 0]);
  }
  return events
    .filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED)
    .map((e) => ({
      attempt: e.activityTaskStartedEventAttributes?.attempt ?? 0,
      identity: e.activityTaskStartedEventAttributes?.identity ?? '',
      ended: endOf.get(String(e.eventId)) ?? 'open',
    }));
}

describe('graceful shutdown (SIGTERM)', function () {
  this.timeout(120_000);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-shutdown-'));
  const children: ChildProcess[] = [];
  after(() => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  describe('the API', () => {
    let workers: { stop(): Promise<void> };
    before(async () => {
      workers = await startProductWorkers({ QUORUM_SIM_LATENCY: 'fixed:1500' });
    });
    after(() => workers.stop());

    /** The API entry point as its own process, with a panel call to it in flight; resolves once the call is running. */
    async function callInFlight(
      graceMs: number,
    ): Promise<{ api: ChildProcess; port: number; orgId: string; key: string; answer: Promise<Response> }> {
      const { child, port, url } = await startApiProcess(stackProcessEnv(dataDir, { QUORUM_SHUTDOWN_GRACE_MS: String(graceMs) }));
      children.push(child);
      const org = await newApiOrg();
      const key = randomUUID();
      const answer = fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${org.ownerKey}`, 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify({ model: PANEL.B, messages: [{ role: 'user', content: 'Why do leaves change colour in autumn?' }] }),
      });
      await until(async () => (await requestState(org.orgId, key)) === 'running', 10_000, 'the call running');
      return { api: child, port, orgId: org.orgId, key, answer };
    }

    it('refuses new connections at once, answers the call in flight, then exits 0', async () => {
      const { api, port, answer } = await callInFlight(25_000);
      let answeredAt: number | undefined;
      void answer.then(() => (answeredAt = Date.now()));
      const exit = exitOf(api);
      api.kill('SIGTERM');

      await until(async () => !(await portOpen(port)), 5_000, 'new connections refused');
      assert.equal(answeredAt, undefined, 'the refusal must come while the call is still in flight');
      const res = await answer;
      const body = (await res.json()) as { choices?: { message: { content: string } }[] };
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.ok(body.choices?.[0]?.message.content);
      const { code, at } = await exit;
      assert.equal(code, 0);
      assert.ok(answeredAt !== undefined && at >= answeredAt, 'the API must not exit before its answer is delivered');
    });

    it('drains and exits 0 when the parent that forked it is gone (its IPC channel closed; no signal reaches it)', async () => {
      const { api, port, answer } = await callInFlight(25_000);
      const exit = exitOf(api);
      api.disconnect();
      await until(async () => !(await portOpen(port)), 5_000, 'new connections refused');
      assert.equal((await answer).status, 200);
      assert.equal((await exit).code, 0);
    });

    it('past its grace, cuts the call off and exits 0; the deliberation still finishes, billed once', async () => {
      const { api, orgId, key, answer } = await callInFlight(300);
      const exit = exitOf(api);
      api.kill('SIGTERM');
      await assert.rejects(answer);
      assert.equal((await exit).code, 0);
      await until(async () => (await requestState(orgId, key)) === 'succeeded', 30_000, 'the deliberation finished');
      assert.equal(await chargeCount(orgId), 1);
    });
  });

  describe('the worker', () => {
    interface Stopped {
      /** Identity prefix of the stopped worker's attempts in history (`pid@host`). */
      identity: string;
      exitCode: number | null;
      exitAfterMs: number;
      calls: { attempt: number; identity: string; ended: string }[];
    }

    /**
     * A worker process with a panel deliberation's three seats running on it, sent SIGTERM; another worker joins
     * then (a rolling restart) and takes what the stopping one leaves. The deliberation must end as if nothing happened.
     */
    async function stoppedMidSeat(graceMs: number): Promise<Stopped> {
      const worker = await startWorkerProcess(
        stackProcessEnv(dataDir, { QUORUM_SIM_LATENCY: 'fixed:3000', QUORUM_SHUTDOWN_GRACE_MS: String(graceMs) }),
      );
      children.push(worker);
      const org = await newOrg();
      const idempotencyKey = randomUUID();
      // Three sim seats in one round, then judge and synthesis: no stand-in, and no lane or critique left to the classifier.
      const mode = await customMode(org.orgId, 'quorum-panel', {
        tiers: { experience: { seats: ['sim/alpha-experience'] }, plus: { seats: SIM_SEATS } },
        express: 'never',
        rounds: 1,
        critique: 'never',
      });
      const running = deliberate({ org, mode, idempotencyKey });
      const workflowId = workflowIds.deliberation(org.orgId, idempotencyKey);
      await until(async () => (await activitiesRunning(stack().env.client, workflowId)) >= 3, 30_000, 'the seats running');

      const exit = exitOf(worker);
      const signalledAt = Date.now();
      worker.kill('SIGTERM');
      // The joining worker's engines are quick: what it runs after the handover (seats retried, judge, synthesis) is
      // not what the stopping worker's grace is measured against.
      const other = await startProductWorkers({ QUORUM_SIM_LATENCY: 'fixed:300' });
      try {
        const { outcome } = await running;
        assert.equal(outcome.status, 'succeeded');
        assert.equal(outcome.seatsAnswered, 3);
        // A seat whose call were taken for a permanent failure would have moved to its backup engine.
        assert.deepEqual(outcome.substitutions, []);
        assert.deepEqual([...outcome.engines].sort(), SIM_SEATS);
        assert.equal(await chargeCount(org.orgId), 1);
      } finally {
        await other.stop();
      }
      const { code, at } = await exit;
      return { identity: `${String(worker.pid)}@`, exitCode: code, exitAfterMs: at - signalledAt, calls: await engineCalls(workflowId) };
    }

    it('lets the seats in flight finish within its grace (none retried) and exits 0', async () => {
      const stopped = await stoppedMidSeat(20_000);
      assert.equal(stopped.exitCode, 0);
      assert.ok(stopped.exitAfterMs < 20_000, `exited ${stopped.exitAfterMs} ms after SIGTERM`);
      const seats = stopped.calls.filter((c) => c.identity.startsWith(stopped.identity));
      assert.equal(seats.length, 3, JSON.stringify(stopped.calls));
      for (const c of seats) assert.equal(c.ended, 'EVENT_TYPE_ACTIVITY_TASK_COMPLETED');
      assert.deepEqual(
        stopped.calls.filter((c) => c.attempt > 1),
        [],
      );
    });

    it('past its grace, hands the seats back: each retried on the other worker, and exits 0', async () => {
      const stopped = await stoppedMidSeat(300);
      assert.equal(stopped.exitCode, 0);
      assert.ok(stopped.exitAfterMs < 15_000, `exited ${stopped.exitAfterMs} ms after SIGTERM`);
      // The seats' first attempts ran on the stopped worker (the only one then); a second attempt means the first
      // was handed back as retryable, and none of the stopped worker's attempts is the one that answered.
      assert.deepEqual(
        stopped.calls.filter((c) => c.identity.startsWith(stopped.identity)),
        [],
      );
      const retried = stopped.calls.filter((c) => c.attempt === 2);
      assert.equal(retried.length, 3, JSON.stringify(stopped.calls));
      for (const c of retried) assert.equal(c.ended, 'EVENT_TYPE_ACTIVITY_TASK_COMPLETED');
    });
  });
});
