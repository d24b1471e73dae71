import assert from 'node:assert/strict';
import { getBalance, listLedger } from '../../db/repositories/ledger';
import { stack } from '../harness/stack';
import { deliberate, newOrg, startProductWorkers, systemMode } from './helpers';

describe('deliberation workflow on sim engines (offline)', function () {
  this.timeout(120_000);
  let workers: { stop(): Promise<void> };
  before(async () => {
    workers = await startProductWorkers({});
  });
  after(() => workers.stop());

  it('runs a panel with every receipt field filled and bills it once', async () => {
    const org = await newOrg();
    const before = await getBalance(stack().db, org.orgId);
    const { outcome: o, replayed } = await deliberate({ org, mode: await systemMode('quorum-debate') });
    console.log(JSON.stringify(o, null, 1).slice(0, 3000));
    assert.equal(replayed, false);
    assert.equal(o.lane, 'panel');
    assert.ok(o.rounds > 1);
    const after = await getBalance(stack().db, org.orgId);
    assert.equal(before.balanceMicros - after.balanceMicros, BigInt(o.money.billedMicros));
    const charges = (await listLedger(stack().db, org.orgId, 50)).filter((e) => e.kind === 'charge');
    assert.equal(charges.length, 1);
  });
});
