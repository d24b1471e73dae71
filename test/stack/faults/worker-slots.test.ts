import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { temporal } from '@temporalio/proto';
import { workflowIds } from '../../../domain/workflow-ids';
import { assertEachBilledOnce, deliberate, newOrg, startProductWorkers, systemMode } from '../deliberation/helpers';
import { pause } from '../../harness/faults';
import { stack } from '../../harness/stack';

const SLOTS = 2;
const CALLS = 6;
const ENGINE_MS = 1_500;

describe('faults: more deliberations at once than a worker takes on', function () {
  this.timeout(90_000);
  let workers: { stop(): Promise<void> };

  before(async () => {
    // At most SLOTS deliberations in the worker whatever its CPU (the cache bounds the tuner), at least one.
    workers = await startProductWorkers({ QUORUM_SIM_LATENCY: `fixed:${ENGINE_MS}` }, undefined, undefined, {
      maxCachedWorkflows: SLOTS,
      workflowSlots: { minimum: 1, targetCpu: 0.8 },
    });
  });
  after(async () => {
    await workers?.stop();
  });

  it('runs at most its slots; the rest wait in the task queue, then each runs in one workflow task, billed once', async () => {
    const { client } = stack().env;
    const org = await newOrg();
    const mode = await systemMode('quorum-express');
    const keys = Array.from({ length: CALLS }, () => randomUUID());
    const ids = keys.map((k) => workflowIds.deliberation(org.orgId, k));
    const started = temporal.api.enums.v1.PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_STARTED;

    // Watched while they run: how many hold a started workflow task (a deliberation the worker has taken on).
    let watching = true;
    let mostAtOnce = 0;
    const watcher = (async (): Promise<void> => {
      while (watching) {
        const described = await Promise.all(
          ids.map((id) =>
            client.workflow
              .getHandle(id)
              .describe()
              .then((d) => d.raw.pendingWorkflowTask?.state === started)
              .catch(() => false),
          ),
        );
        mostAtOnce = Math.max(mostAtOnce, described.filter(Boolean).length);
        await pause(100);
      }
    })();
    const outcomes = await Promise.all(
      keys.map((idempotencyKey, i) => deliberate({ org, mode, idempotencyKey, content: `Question ${i}: why is the sky blue?` })),
    );
    watching = false;
    await watcher;

    assert.ok(mostAtOnce >= 1 && mostAtOnce <= SLOTS, `${mostAtOnce} deliberations taken on at once`);
    for (const id of ids) {
      const events = (await client.workflow.getHandle(id).fetchHistory()).events ?? [];
      assert.equal(events.filter((e) => e.workflowTaskTimedOutEventAttributes).length, 0, `${id}: a workflow task timed out`);
      assert.equal(events.filter((e) => e.workflowTaskCompletedEventAttributes).length, 1, `${id}: one workflow task`);
    }
    await assertEachBilledOnce(
      org.orgId,
      outcomes.map((o) => o.outcome.requestId),
    );
  });
});
