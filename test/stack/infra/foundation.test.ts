import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { stack } from '../../harness/stack';
import { testWorker } from '../../harness/worker';
import { createProbeActivities } from '../../fixtures/probe-activities';
import { probeWorkflow } from '../../fixtures/probe-workflow';

describe('foundation: the test stack is real', () => {
  it('round-trips a row through a real PostgreSQL', async () => {
    const { db } = stack();
    const version = await db.raw<{ rows: { version: string }[] }>('select version()');
    assert.match(version.rows[0].version, /^PostgreSQL \d+/);
    const id = `org_${randomUUID()}`;
    await db('organisations').insert({ id, name: 'Round Trip Ltd' });
    const row = await db('organisations').where({ id }).first();
    assert.equal(row.name, 'Round Trip Ltd');
    assert.equal(row.status, 'active');
    assert.ok(row.created_at instanceof Date);
  });

  it('runs a workflow and its activity through the Temporal server, writing to Postgres', async () => {
    const { env, db } = stack();
    const { worker, taskQueue } = await testWorker(
      path.join(__dirname, '..', '..', 'fixtures', 'probe-workflow.ts'),
      createProbeActivities(db),
    );
    const id = `org_${randomUUID()}`;
    const handle = await worker.runUntil(async () => {
      const h = await env.client.workflow.start(probeWorkflow, { taskQueue, workflowId: `probe/${id}`, args: [{ id, name: 'Probe' }] });
      assert.equal(await h.result(), id);
      return h;
    });
    // The server recorded the activity in the workflow's history: this ran through Temporal, not in-process.
    const history = await handle.fetchHistory();
    const types = (history.events ?? []).map((e) => e.eventType);
    assert.ok(types.includes(12 /* ACTIVITY_TASK_COMPLETED */), `history lacks a completed activity: ${types.join(',')}`);
    assert.equal((await db('organisations').where({ id }).first()).name, 'Probe');
  });

  it('registers Quorum search attributes on the server', async () => {
    const { env, namespace } = stack();
    const res = await env.connection.operatorService.listSearchAttributes({ namespace });
    for (const name of ['QuorumOrg', 'QuorumMode', 'QuorumLane', 'QuorumStatus']) {
      assert.ok(res.customAttributes?.[name] !== undefined, `${name} missing`);
    }
  });
});
