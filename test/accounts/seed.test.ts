import assert from 'node:assert/strict';
import { authenticate } from '../../db/repositories/api-keys';
import { getBalance } from '../../db/repositories/ledger';
import { DEMO_ORG_ID, seedDemoOrganisation } from '../../db/seed';
import { stack } from '../harness/stack';

describe('accounts: demo seed', () => {
  it('creates the demo organisation once and returns its key only then', async () => {
    const { db, env } = stack();
    const first = await seedDemoOrganisation(db, env.client);
    assert.equal(first.orgId, DEMO_ORG_ID);
    assert.ok(first.apiKey);
    assert.equal((await authenticate(db, first.apiKey)).orgId, DEMO_ORG_ID);
    assert.equal((await getBalance(db, DEMO_ORG_ID)).balanceMicros, 25_000_000n);
    assert.deepEqual(await seedDemoOrganisation(db, env.client), { orgId: DEMO_ORG_ID });
    const timer = env.client.workflow.getHandle(`trial/${DEMO_ORG_ID}`);
    assert.equal((await timer.describe()).status.name, 'RUNNING');
    await timer.terminate('test over');
  });
});
