import type { ChildProcess } from 'node:child_process';
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { temporal } from '@temporalio/proto';
import { RunEndedEventSchema, TestPollSchema } from '../../../api/v1/run-resources';
import { workflowIds } from '../../../domain/workflow-ids';
import { writeWorkflowBundle } from '../../../worker/bundle';
import { call, newOrg, startApi, type Api } from '../api/helpers';
import { assertEachBilledOnce, requestLedger, requestState } from '../deliberation/helpers';
import { demoModes, untilEnded } from '../runs/helpers';
import { bundleFile, metaFile, type OldBundleMeta } from '../../fixtures/old-workers/build';
import { quorumCli } from '../../harness/cli';
import { exitOf, postCompletion, until } from '../../harness/faults';
import { stack } from '../../harness/stack';
import { stackProcessEnv, startWorkerProcess } from '../../harness/worker';

/**
 * Issue 30 item 4: a new worker version deployed while a run and a deliberation are in flight (docs/cluster-operations.md
 * "Deploying a new worker version"). The old worker runs the workflows as they were at an earlier commit (the fixture
 * test/fixtures/old-workers/ built: the last whose deliberation read its changes with `patched()`, which today's
 * `deprecatePatch()`) with today's activities, as a rolling deploy has it; it is stopped as a deploy stops it (SIGTERM:
 * it drains), and a worker with today's workflows takes over both executions from their histories.
 */

const EventType = temporal.api.enums.v1.EventType;
const QUESTIONS = { easy: 4, medium: 4, hard: 4 };
const TOTAL = QUESTIONS.easy + QUESTIONS.medium + QUESTIONS.hard;
/**
 * Every engine call on the old worker takes this long, so both executions are still going when it is stopped: a
 * deliberation's calls run inside its workflow task, which the worker completes (heartbeats) at 4 s, its patch
 * markers in it, with the panel still going. The new worker's calls are quicker, to keep the test short.
 */
const OLD_LATENCY = 'fixed:1500';
const NEW_LATENCY = 'fixed:400';

/** Who completed each workflow task of an execution (a worker's identity is `pid@host`), in order. */
async function taskWorkers(workflowId: string): Promise<string[]> {
  const events = (await stack().env.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  return events
    .filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)
    .map((e) => e.workflowTaskCompletedEventAttributes?.identity ?? '');
}

/** The questions of the run answered so far. */
async function questionRows(runId: string): Promise<string[]> {
  const rows = (await stack().db('run_questions').where({ run_id: runId }).select('question_id')) as { question_id: string }[];
  return rows.map((r) => r.question_id);
}

/** The patch markers of an execution: each change's name, and whether the code that recorded it had deprecated it. */
async function patchMarkers(workflowId: string): Promise<{ id: string; deprecated: boolean }[]> {
  const events = (await stack().env.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  return events
    .filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch')
    .map((e) => {
      const data = e.markerRecordedEventAttributes?.details?.['patch-data']?.payloads?.[0]?.data;
      return JSON.parse(Buffer.from(data ?? []).toString('utf8')) as { id: string; deprecated: boolean };
    });
}

/** A loopback receiver of run callbacks: every body it was sent. */
async function receiver(): Promise<{ url: string; bodies: string[]; server: Server }> {
  const bodies: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push(Buffer.concat(chunks).toString('utf8'));
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, bodies, server };
}

describe('deploying a new worker version while a run and a deliberation are in flight (patches deprecated)', function () {
  this.timeout(120_000);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-rolling-deploy-'));
  const children: ChildProcess[] = [];
  const old = JSON.parse(fs.readFileSync(metaFile, 'utf8')) as OldBundleMeta;
  const oldBundle = path.join(dataDir, 'old-workflow-bundle.js');
  const newBundle = path.join(dataDir, 'workflow-bundle.js');
  let api: Api;
  let hooks: Awaited<ReturnType<typeof receiver>>;

  before(async () => {
    const code = zlib.gunzipSync(fs.readFileSync(bundleFile));
    assert.equal(createHash('sha256').update(code).digest('hex'), old.sha256, 'the fixture is the bundle its bundle.json describes');
    fs.writeFileSync(oldBundle, code);
    // Today's bundle built up front, as a deploy's image has it (QUORUM_WORKFLOW_BUNDLE), so the handover is a restart.
    await writeWorkflowBundle(newBundle);
    api = await startApi('B', { runs: { testsPerDay: 20, certificationsPerDay: 3, window: 3 } });
    hooks = await receiver();
  });
  after(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await api.close();
    await new Promise((r) => hooks.server.close(r));
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /** The product's worker entry point on the given workflow bundle; it drains for up to `graceMs` when stopped. */
  async function worker(bundle: string, latency: string, graceMs: number): Promise<ChildProcess> {
    const env = stackProcessEnv(dataDir, {
      QUORUM_WORKFLOW_BUNDLE: bundle,
      QUORUM_SIM_LATENCY: latency,
      QUORUM_SHUTDOWN_GRACE_MS: String(graceMs),
      QUORUM_WORKER_METRICS_PORT: '0',
    });
    const child = await startWorkerProcess(env);
    children.push(child);
    return child;
  }

  it(`a run and a deliberation begun on the workflows of ${old.commit.slice(0, 7)} finish on today's, each billed once`, async () => {
    const org = await newOrg(50);
    const modes = await demoModes(org.orgId);
    // A drain shorter than the deliberation's calls left: its workflow task runs them (local activities) and would
    // otherwise carry the whole panel to its end on the old worker; cut, the call goes on on the new one from its history.
    const oldWorker = await worker(oldBundle, OLD_LATENCY, 1_000);

    const launched = await call(api, 'POST', '/v1/tests', {
      key: org.ownerKey,
      body: { model: modes.strong.B, questions: QUESTIONS, svc: { callback_url: hooks.url } },
    });
    assert.equal(launched.status, 200, JSON.stringify(launched.body));
    const runId = launched.body.batch_id as string;
    const { workflow_id: runWorkflow } = (await stack().db('runs').where({ id: runId }).first('workflow_id')) as { workflow_id: string };
    await until(async () => (await questionRows(runId)).length >= 2, 40_000, 'the old worker answering questions');

    const key = randomUUID();
    const deliberationWorkflow = workflowIds.deliberation(org.orgId, key);
    const answer = postCompletion(api.url, org.ownerKey, key, { model: modes.strong.B });
    await until(
      async () => {
        try {
          return (await taskWorkers(deliberationWorkflow)).length > 0;
        } catch {
          return false; // the API has not started it yet
        }
      },
      20_000,
      "the deliberation's first workflow task completed (its heartbeat) on the old worker",
    );

    // The deploy: the old worker drains and exits; only then does the new one start (one worker at a time).
    const exit = exitOf(oldWorker);
    oldWorker.kill('SIGTERM');
    assert.equal((await exit).code, 0);
    const byOldCode = await questionRows(runId);
    assert.ok(byOldCode.length < TOTAL, `the run had ${byOldCode.length} of ${TOTAL} questions when the old worker left`);
    const dlb = await stack().env.client.workflow.getHandle(deliberationWorkflow).describe();
    assert.equal(dlb.status.name, 'RUNNING', 'the deliberation was still going when the old worker left');
    const newWorker = await worker(newBundle, NEW_LATENCY, 10_000);

    const reply = await answer;
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.ok(reply.body.choices?.[0]?.message.content);
    const done = TestPollSchema.parse((await untilEnded(api, org.ownerKey, 'tests', runId, 90_000)).body);

    // Both executions ran on both versions: the old worker's tasks first, the new one's after.
    for (const id of [runWorkflow, deliberationWorkflow]) {
      const workers = await taskWorkers(id);
      const oldTasks = workers.filter((w) => w.startsWith(`${String(oldWorker.pid)}@`)).length;
      const newTasks = workers.filter((w) => w.startsWith(`${String(newWorker.pid)}@`)).length;
      assert.ok(oldTasks > 0 && newTasks > 0, `${id}: ${oldTasks} tasks on the old worker, ${newTasks} on the new`);
      assert.equal(oldTasks + newTasks, workers.length);
    }

    // The run: completed, every question answered once.
    assert.equal(done.batch.state, 'completed');
    assert.equal(done.batch.progress.done, TOTAL);
    assert.equal(done.batch.results?.overall.questions, TOTAL);
    const rows = await questionRows(runId);
    assert.equal(rows.length, TOTAL);
    assert.equal(new Set(rows).size, TOTAL);
    assert.deepEqual(
      (await requestLedger(org.orgId, runId)).map((e) => e.kind),
      ['test_run_charge'],
      'the run charged once, up front; nothing refunded',
    );
    // The run's callback, from the end the new workflows ran: delivered once.
    await until(() => hooks.bodies.length > 0, 20_000, 'the run.ended callback');
    assert.equal(hooks.bodies.length, 1);
    const event = RunEndedEventSchema.parse(JSON.parse(hooks.bodies[0]));
    assert.deepEqual([event.batch_id, event.state], [runId, 'completed']);

    // The deliberation: the old code's markers (not deprecated) are what today's deprecatePatch() replayed.
    const markers = await patchMarkers(deliberationWorkflow);
    for (const id of ['own-key-seats-billed-by-provider', 'engine-calls-in-workflow-task'])
      assert.ok(
        markers.some((m) => m.id === id && !m.deprecated),
        `${id}: recorded by the old workflows with patched(): ${JSON.stringify(markers)}`,
      );
    // Answered and billed once, nothing held; and the audit finds nothing over the organisation.
    const requestId = reply.body.svc?.request_id;
    assert.ok(requestId);
    assert.equal(await requestState(org.orgId, key), 'succeeded');
    await assertEachBilledOnce(org.orgId, [requestId]);
    const audit = await quorumCli(['audit', '--org', org.orgId, '--json'], dataDir, {
      TEMPORAL_ADDRESS: stack().env.address,
      TEMPORAL_NAMESPACE: stack().namespace,
    });
    assert.equal(audit.code, 0, audit.stdout + audit.stderr);
    assert.deepEqual(JSON.parse(audit.stdout), { ok: true, temporal_checked: true, violations: [] });

    const exitNew = exitOf(newWorker);
    newWorker.kill('SIGTERM');
    assert.equal((await exitNew).code, 0);
  });
});
