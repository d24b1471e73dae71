import type { ChildProcess } from 'node:child_process';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { workflowIds } from '../../../domain/workflow-ids';
import { newOrg as newApiOrg, PANEL } from '../api/helpers';
import { chargeCount, customMode, deliberate, newOrg, requestState, startProductWorkers } from '../deliberation/helpers';
import { engineCallsOut, exitOf, portOpen, until } from '../../harness/faults';
import { stack } from '../../harness/stack';
import { stackProcessEnv, startApiProcess, startWorkerProcess } from '../../harness/worker';

const SIM_SEATS = ['sim/alpha-plus', 'sim/beta-plus', 'sim/gamma-plus'];

/** A local activity's record in its marker (Temporal's Core SDK writes it as JSON under `data`). */
const MarkerData = z.object({ attempt: z.number(), activity_type: z.string() });

interface EngineCall {
  type: string;
  attempt: number;
  /** The worker that ran it (`pid@host`): an activity's, or the one whose workflow task completion recorded a local one. */
  identity: string;
  ended: 'completed' | 'failed' | 'open';
}

/**
 * The engine calls of a deliberation as its history tells them. Local activities inside its workflow task (DESIGN §13;
 * patched 'engine-calls-in-workflow-task') are markers, written when the task completes or heartbeats: a call whose
 * worker stopped before that leaves nothing (it runs again wherever the task goes next). Activities (a deliberation
 * begun before): the last attempt of each (an attempt that failed and was retried leaves no event).
 */
async function engineCalls(workflowId: string): Promise<EngineCall[]> {
  const events = (await stack().env.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const byId = new Map(events.map((e) => [String(e.eventId), e]));
  const endOf = new Map<string, EngineCall['ended']>();
  for (const e of events) {
    const ended = e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes ?? e.activityTaskTimedOutEventAttributes;
    if (ended) endOf.set(String(ended.startedEventId), e.activityTaskCompletedEventAttributes ? 'completed' : 'failed');
  }
  return events.flatMap((e): EngineCall[] => {
    const started = e.activityTaskStartedEventAttributes;
    if (started) {
      const scheduled = byId.get(String(started.scheduledEventId))?.activityTaskScheduledEventAttributes;
      const identity = started.identity ?? '';
      return [
        {
          type: scheduled?.activityType?.name ?? '',
          attempt: started.attempt ?? 0,
          identity,
          ended: endOf.get(String(e.eventId)) ?? 'open',
        },
      ];
    }
    const marker = e.markerRecordedEventAttributes;
    const data = marker?.markerName === 'core_local_activity' ? marker.details?.data?.payloads?.[0]?.data : undefined;
    if (!marker || !data) return [];
    const { attempt, activity_type: type } = MarkerData.parse(JSON.parse(Buffer.from(data).toString('utf8')));
    const identity = byId.get(String(marker.workflowTaskCompletedEventId))?.workflowTaskCompletedEventAttributes?.identity ?? '';
    return [{ type, attempt, identity, ended: marker.failure ? 'failed' : 'completed' }];
  });
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
      calls: EngineCall[];
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
      await until(async () => engineCallsOut(stack().env.client, workflowId, { count: 3 }), 30_000, 'the seats running');

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
      // The seats it was running answered on it and were recorded by it, none run again elsewhere.
      const seats = stopped.calls.filter((c) => c.type === 'seat');
      assert.equal(seats.length, 3, JSON.stringify(stopped.calls));
      for (const c of seats) {
        assert.ok(c.identity.startsWith(stopped.identity), JSON.stringify(stopped.calls));
        assert.equal(c.ended, 'completed');
      }
      assert.deepEqual(
        stopped.calls.filter((c) => c.attempt > 1),
        [],
      );
    });

    it('past its grace, hands the seats back: each retried on the other worker, and exits 0', async () => {
      const stopped = await stoppedMidSeat(300);
      assert.equal(stopped.exitCode, 0);
      assert.ok(stopped.exitAfterMs < 15_000, `exited ${stopped.exitAfterMs} ms after SIGTERM`);
      // The seats ran first on the stopped worker (the only one then); none of its runs is the one that answered: each
      // seat was handed back and ran again on the other worker (an activity's next attempt, or a local one's run in
      // the workflow task the other worker took over).
      const seats = stopped.calls.filter((c) => c.type === 'seat');
      assert.deepEqual(
        seats.filter((c) => c.identity.startsWith(stopped.identity)),
        [],
      );
      assert.equal(seats.length, 3, JSON.stringify(stopped.calls));
      for (const c of seats) assert.equal(c.ended, 'completed');
    });
  });
});
