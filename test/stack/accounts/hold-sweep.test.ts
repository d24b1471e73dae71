import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { getBalance } from '../../../db/repositories/ledger';
import { violationLine } from '../../../domain/audit';
import { workflowIds } from '../../../domain/workflow-ids';
import { createLogger } from '../../../infra/log';
import { audit } from '../../../operations/audit';
import { releaseClosedHolds, startHoldSweep } from '../../../worker/hold-sweep';
import { stack } from '../../harness/stack';
import { deliberate, newOrg, requestState, startProductWorkers, systemMode } from '../deliberation/helpers';

/**
 * Issue 38 item 11: a hold whose workflow an operator terminated is released by the workers' sweep once Temporal says
 * the workflow is closed: the balance's reserved amount goes back to 0, the request ends failed, nothing is charged,
 * and the auditor, which names the hold while it outlives its workflow, finds the organisation clean again.
 */

const waitFor = async <T>(what: string, read: () => Promise<T>, done: (v: T) => boolean, deadlineMs = 60_000): Promise<T> => {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > until) throw new Error(`${what}: still ${String(value)} after ${deadlineMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
};

describe('holds of closed workflows are released by the sweep', function () {
  this.timeout(120_000);
  let workers: { stop(): Promise<void> };

  before(async () => {
    // Engines slow enough that the call is still running when its workflow is terminated.
    workers = await startProductWorkers({ QUORUM_SIM_LATENCY: 'fixed:30000' });
  });
  after(async () => {
    await workers.stop();
  });

  it('a terminated deliberation: its hold outlives it (audited), then the sweep releases it once, nothing charged', async () => {
    const { db, env } = stack();
    const org = await newOrg(20);
    const idempotencyKey = randomUUID();
    const running = deliberate({ org, mode: await systemMode('quorum-panel'), form: 'B', idempotencyKey }).then(
      () => 'answered',
      (err: unknown) => String(err),
    );
    const held = await waitFor(
      'the call holds its ceiling',
      async () => (await getBalance(db, org.orgId)).reservedMicros,
      (r) => r > 0n,
    );
    // While its workflow runs, a sweep leaves the hold alone.
    await releaseClosedHolds({ db, client: env.client }, 0);
    const before = await getBalance(db, org.orgId);
    assert.equal(before.reservedMicros, held);
    const workflowId = workflowIds.deliberation(org.orgId, idempotencyKey);
    await env.client.workflow.getHandle(workflowId).terminate('an operator ends it');
    assert.notEqual(await running, 'answered');
    const { id: requestId } = (await db('requests').where({ org_id: org.orgId, idempotency_key: idempotencyKey }).first('id')) as {
      id: string;
    };

    // The closed workflow released nothing: the auditor names the hold that outlives it.
    const found = await audit(db, env.client, { orgIds: [org.orgId] });
    assert.deepEqual(
      found.map((v) => [v.invariant, v.ids.request_id]),
      [['hold_outlives_request', requestId]],
      found.map(violationLine).join('\n'),
    );
    assert.match(found[0].detail, /workflow is terminated/);

    // The sweep (as a worker runs it, every 200 ms here) releases it.
    const sweep = startHoldSweep({ db, client: env.client, log: createLogger('test-sweep', () => undefined) }, 200);
    try {
      await waitFor(
        'the hold is released',
        async () => (await getBalance(db, org.orgId)).reservedMicros,
        (r) => r === 0n,
      );
    } finally {
      await sweep.stop();
    }
    const after = await getBalance(db, org.orgId);
    assert.equal(after.balanceMicros, before.balanceMicros, 'nothing charged');
    assert.equal(after.availableMicros, before.availableMicros + held);
    assert.equal(await requestState(org.orgId, idempotencyKey), 'failed');
    // Exactly once: a second sweep changes nothing; one release entry for the request.
    await releaseClosedHolds({ db, client: env.client }, 0);
    assert.deepEqual(await getBalance(db, org.orgId), after);
    const entries = (await db('ledger_entries').where({ org_id: org.orgId, request_id: requestId }).select('kind')) as { kind: string }[];
    assert.deepEqual(entries.map((e) => e.kind).sort(), ['release', 'reservation']);
    assert.deepEqual((await audit(db, env.client, { orgIds: [org.orgId] })).map(violationLine), []);
  });
});
