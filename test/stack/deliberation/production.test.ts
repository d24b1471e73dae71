import assert from 'node:assert/strict';
import { getBalance } from '../../../db/repositories/ledger';
import { call, newKey, newOrg, PANEL, startApi, USER, type Api } from '../api/helpers';
import { stack } from '../../harness/stack';
import { chargeCount, startProductWorkers } from './helpers';

/** Issue 16: a paying caller never gets a simulated answer in production. */
describe('deliberation in production: no sim stand-ins for real engines', function () {
  this.timeout(60_000);
  let api: Api;
  let workers: { stop(): Promise<void> };
  before(async () => {
    // No provider keys configured: every seat of the system modes' design is unavailable here.
    workers = await startProductWorkers({ QUORUM_ENV: 'production' });
    api = await startApi('B');
  });
  after(async () => {
    await api.close();
    await workers.stop();
  });

  it('a live call whose seats cannot run on a real engine ends 503 mode_unavailable, and nothing is billed', async () => {
    const org = await newOrg(20);
    const before = await getBalance(stack().db, org.orgId);
    const r = await call(api, 'POST', '/v1/chat/completions', {
      key: org.ownerKey,
      body: { model: PANEL.B, messages: USER('Why is the sky blue?') },
    });
    assert.equal(r.status, 503, JSON.stringify(r.body));
    assert.equal(r.body.error?.code, 'mode_unavailable');
    assert.match(r.body.error?.message ?? '', /no engine of this design can run here/);
    const after = await getBalance(stack().db, org.orgId);
    assert.equal(after.balanceMicros, before.balanceMicros);
    assert.equal(after.reservedMicros, 0n);
    assert.equal(await chargeCount(org.orgId), 0);
  });

  it('a test key still runs on sim engines: it is billed nothing either way', async () => {
    const org = await newOrg(20);
    const test = await newKey(org.orgId, { keyKind: 'test' });
    const r = await call(api, 'POST', '/v1/chat/completions', {
      key: test,
      body: { model: PANEL.B, messages: USER('Why is the sky blue?') },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal((r.body.svc as { billed_usd: number }).billed_usd, 0);
  });
});
