import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { workflowIds } from '../../../domain/workflow-ids';
import { workflowsPath } from '../../../worker/workers';
import { deliberationProgressQuery } from '../../../workflows/messages';
import { until } from '../../harness/faults';
import { stack } from '../../harness/stack';
import { deliberate, newOrg, recordHistory, startProductWorkers, systemMode } from './helpers';

const { EventType } = temporal.api.enums.v1;

/**
 * A query that reaches a deliberation before its first workflow task (a client polling a background response, a
 * retry's progress query) is answered in that task while its first local activity (`prepare`) resolves: Core then
 * completes the task with that activity's marker alone and runs the rest in the next. On replay the activity resolves
 * in the first task, so a `patched()` read right after it cannot see its marker, recorded in the next: the history
 * no longer replays (a worker that loses the execution from its cache cannot carry it on). docs/cluster-operations.md,
 * "Patches and local activities".
 */
describe('a deliberation queried before its first workflow task', function () {
  this.timeout(120_000);

  it('replays its history, whose first task carries only its first local activity', async () => {
    const org = await newOrg();
    const idempotencyKey = randomUUID();
    const workflowId = workflowIds.deliberation(org.orgId, idempotencyKey);
    const handle = stack().env.client.workflow.getHandle(workflowId);
    // No worker polls yet: the deliberation's first task waits, and the query is delivered with it.
    const running = deliberate({ org, mode: await systemMode('quorum-panel'), idempotencyKey });
    await until(
      () =>
        handle.describe().then(
          () => true,
          () => false,
        ),
      10_000,
      'the deliberation started',
    );
    const queried = handle.query(deliberationProgressQuery);
    const workers = await startProductWorkers({});
    try {
      assert.equal((await queried).stage, 'classifying', 'answered in the first task, before the seats');
      assert.equal((await running).outcome.status, 'succeeded');
    } finally {
      await workers.stop();
    }
    await recordHistory('queried-at-start', workflowId);
    const history = await handle.fetchHistory();

    const events = history.events ?? [];
    const firstDone = events.findIndex((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
    assert.deepEqual(
      events.slice(firstDone + 1, firstDone + 3).map((e) => [e.eventType, e.markerRecordedEventAttributes?.markerName]),
      [
        [EventType.EVENT_TYPE_MARKER_RECORDED, 'core_local_activity'],
        [EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, undefined],
      ],
      'the first task ended with its local activity and nothing after it: the shape this test is about',
    );
    const sinks = { deliberationEvents: { record: { fn: () => undefined, callDuringReplay: false } } };
    await Worker.runReplayHistory({ workflowsPath, sinks }, history, workflowId);
  });
});
