import { WorkflowNotFoundError } from '@temporalio/client';
import assert from 'node:assert/strict';
import { authenticate } from '../../../db/repositories/api-keys';
import { getBalance } from '../../../db/repositories/ledger';
import { listOrganisationsAwaitingTrialTimer } from '../../../db/repositories/trial-credit';
import { DEMO_ORG_ID, seedDemoOrganisation } from '../../../db/seed';
import { workflowIds } from '../../../domain/workflow-ids';
import { stack } from '../../harness/stack';

describe('accounts: demo seed', () => {
  it('creates the demo organisation once, returns its key only then, and starts nothing in Temporal', async () => {
    const { db, env } = stack();
    const first = await seedDemoOrganisation(db);
    assert.equal(first.orgId, DEMO_ORG_ID);
    assert.ok(first.apiKey);
    assert.ok(first.trialStartedAt instanceof Date);
    assert.equal((await authenticate(db, first.apiKey)).orgId, DEMO_ORG_ID);
    assert.equal((await getBalance(db, DEMO_ORG_ID)).balanceMicros, 125_000_000n);
    assert.deepEqual(await seedDemoOrganisation(db), { orgId: DEMO_ORG_ID });
    // The simulated demo modes belong to it, listed, so both Forms can run and certify them offline.
    const modes = (await db('modes').where({ org_id: DEMO_ORG_ID }).orderBy('id').select('id', 'listing_state', 'name')) as {
      id: string;
      listing_state: string | null;
      name: string;
    }[];
    assert.deepEqual(
      modes.map((m) => [m.id, m.listing_state]),
      [
        ['demo-strong-sim', 'listed'],
        ['demo-weak-sim', 'listed'],
      ],
    );
    assert.ok(modes.every((m) => /simulated/.test(m.name)));
    // The seed touches Postgres only: the supervisor starts the trial timer (test/stack/launcher/supervisor.test.ts), and
    // until something does, the organisation is one ensureTrialTimers will pick up.
    await assert.rejects(env.client.workflow.getHandle(workflowIds.trialCredit(DEMO_ORG_ID)).describe(), WorkflowNotFoundError);
    assert.ok((await listOrganisationsAwaitingTrialTimer(db)).some((o) => o.orgId === DEMO_ORG_ID));
  });
});
