import { temporal } from '@temporalio/proto';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { workflowIds } from '../../../domain/workflow-ids';
import { deliberationProgressQuery } from '../../../workflows/messages';
import { until } from '../../harness/faults';
import { replayHistories } from '../../harness/histories';
import { stack } from '../../harness/stack';
import { deliberate, newOrg, recordHistory, startProductWorkers, systemMode } from './helpers';

const { EventType } = temporal.api.enums.v1;

interface Made {
  workflowId: string;
  history: temporal.api.history.v1.IHistory;
}

/**
 * A query that reaches a deliberation before its first workflow task (a client polling a background response, a
 * retry's progress query) is answered in that task while its first local activity (`prepare`) resolves: Core then
 * completes the task with that activity's marker alone and runs the rest in the next. On replay the activity resolves
 * in the first task, so a `patched()` read right after it cannot see its marker, recorded in the next: the history
 * no longer replays (a worker that loses the execution from its cache cannot carry it on). docs/cluster-operations.md,
 * "Patches and local activities".
 */
/** Up to this many deliberations: whether the activity resolves before Core answers the query is a race. */
const ATTEMPTS = 6;

/** The first task ended with its first local activity's marker and nothing after it: the shape this test is about. */
function splitAfterFirstActivity(history: temporal.api.history.v1.IHistory): boolean {
  const events = history.events ?? [];
  const firstDone = events.findIndex((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
  const [marker, next] = events.slice(firstDone + 1, firstDone + 3);
  return (
    marker?.markerRecordedEventAttributes?.markerName === 'core_local_activity' &&
    next?.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED
  );
}

describe('a deliberation queried before its first workflow task', function () {
  this.timeout(180_000);

  /** One deliberation whose progress is queried before any worker polls: its history once it has answered. */
  async function queriedBeforeWorkers(): Promise<Made> {
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
    return { workflowId, history: await handle.fetchHistory() };
  }

  it('replays its history, whose first task carries only its first local activity', async () => {
    const made: Made[] = [];
    while (made.length < ATTEMPTS && !made.some((h) => splitAfterFirstActivity(h.history))) made.push(await queriedBeforeWorkers());
    const split = made.find((h) => splitAfterFirstActivity(h.history));
    assert.ok(split, `none of ${made.length} deliberations had its first task end with its local activity alone`);
    await recordHistory('queried-at-start', split.workflowId);
    assert.deepEqual(await replayHistories(made), { replayed: made.length, failures: [] });
  });
});
