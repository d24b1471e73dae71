import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { getBalance, topUp } from '../../../db/repositories/ledger';
import { call, newOrg } from '../api/helpers';
import { connect, json } from '../mcp/helpers';
import { cancelToEnd } from '../../harness/audit';
import { stack } from '../../harness/stack';
import { stackProcessEnv, startApiProcess } from '../../harness/worker';
import { demoModes, runApis, untilEnded } from './helpers';

/**
 * A launch is billed once and exactly at its price (issue 26 items 2, 5 and 7): a dry run is the price of the launch
 * that follows it; a repeat without a key, from a client, an agent or an API that died, is the same run; and the run's
 * charge is its own workflow's first step, so no crash leaves money taken without a run.
 */
describe('launches: priced by their dry run, billed once, never charged without a run', function () {
  this.timeout(240_000);
  const apis = runApis();

  const balanceOf = async (orgId: string): Promise<bigint> => (await getBalance(stack().db, orgId)).balanceMicros;
  const chargesOf = (orgId: string, runId: unknown) =>
    stack()
      .db('ledger_entries')
      .where({ org_id: orgId, kind: 'test_run_charge', request_id: String(runId) });

  it('a dry run is the price: the same body launched after it bills exactly its total_cost_usd, in both Forms', async () => {
    for (const form of ['A', 'B'] as const) {
      const org = await newOrg(20);
      const modes = await demoModes(org.orgId);
      const body =
        form === 'A'
          ? { model: modes.strong.A, buckets: { light: 3, medium: 2, hard: 2 } }
          : { model: modes.strong.B, questions: { easy: 3, medium: 2, hard: 2 } };
      const dry = await call(apis[form], 'POST', '/v1/tests', { key: org.ownerKey, body: { ...body, dry_run: true } });
      assert.equal(dry.status, 200, JSON.stringify(dry.body));
      const priced = Math.round(Number(dry.body.total_cost_usd) * 1_000_000);
      assert.ok(priced > 0);
      const before = await balanceOf(org.orgId);
      const launched = await call(apis[form], 'POST', '/v1/tests', { key: org.ownerKey, body });
      assert.equal(launched.status, 200, JSON.stringify(launched.body));
      assert.equal(Math.round(Number(launched.body.billed_usd) * 1_000_000), priced, `${form}: billed what the dry run quoted`);
      assert.equal(before - (await balanceOf(org.orgId)), BigInt(priced), `${form}: the balance moved by the quoted price`);
    }
  });

  it('a repeat without a key is the same run, charged once: REST in both Forms, and the MCP tools', async () => {
    const org = await newOrg(100);
    const modes = await demoModes(org.orgId);
    for (const form of ['A', 'B'] as const) {
      const body = form === 'A' ? { model: modes.weak.A, buckets: { light: 1 } } : { model: modes.weak.B, questions: { easy: 1 } };
      const first = await call(apis[form], 'POST', '/v1/tests', { key: org.ownerKey, body });
      const again = await call(apis[form], 'POST', '/v1/tests', { key: org.ownerKey, body });
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.equal(again.body.batch_id, first.body.batch_id, `${form}: the retry is the same batch`);
      assert.equal((await chargesOf(org.orgId, first.body.batch_id)).length, 1);
    }
    // An agent's retry of run_test after a timeout: the same batch, one charge; its own key makes another run.
    const client = await connect(apis.B, org.ownerKey);
    try {
      const args = { model: modes.strong.B, questions: { easy: 1, medium: 1 } };
      const one = json(await client.callTool({ name: 'run_test', arguments: args }));
      const two = json(await client.callTool({ name: 'run_test', arguments: args }));
      assert.ok(one.batch_id, JSON.stringify(one));
      assert.equal(two.batch_id, one.batch_id);
      assert.equal((await chargesOf(org.orgId, one.batch_id)).length, 1);
      const keyed = json(await client.callTool({ name: 'run_test', arguments: { ...args, idempotency_key: 'agent-attempt-7' } }));
      assert.notEqual(keyed.batch_id, one.batch_id);
      const keyedAgain = json(await client.callTool({ name: 'run_test', arguments: { ...args, idempotency_key: 'agent-attempt-7' } }));
      assert.equal(keyedAgain.batch_id, keyed.batch_id);
      // certify_mode, $50: retried, it is one certification and one charge.
      const cert = json(await client.callTool({ name: 'certify_mode', arguments: { model: modes.strong.B } }));
      const certAgain = json(await client.callTool({ name: 'certify_mode', arguments: { model: modes.strong.B } }));
      assert.ok(cert.batch_id, JSON.stringify(cert));
      assert.equal(certAgain.batch_id, cert.batch_id);
      assert.equal((await chargesOf(org.orgId, cert.batch_id)).length, 1);
      // Cancelled to its end, its unanswered questions credited back (a terminated workflow would keep the $50).
      await cancelToEnd(String(cert.batch_id));
    } finally {
      await client.close();
    }
  });

  it('a refused admission writes nothing; once the money is there, the same request launches', async () => {
    const org = await newOrg(1);
    const modes = await demoModes(org.orgId);
    const body = { model: modes.strong.B };
    // A $50 certification against about $1 of credit.
    const refused = await call(apis.B, 'POST', '/v1/certify', { key: org.ownerKey, body });
    assert.equal(refused.status, 402, JSON.stringify(refused.body));
    assert.equal(refused.body.error?.code, 'insufficient_balance');
    assert.equal((await stack().db('runs').where({ org_id: org.orgId })).length, 0, 'no run row');
    await topUp(stack().db, { orgId: org.orgId, amountMicros: 60_000_000n });
    const launched = await call(apis.B, 'POST', '/v1/certify', { key: org.ownerKey, body });
    assert.equal(launched.status, 200, JSON.stringify(launched.body));
    const charges = (await stack()
      .db('ledger_entries')
      .where({ org_id: org.orgId, kind: 'test_run_charge', request_id: String(launched.body.batch_id) })) as { amount_micros: string }[];
    assert.deepEqual(
      charges.map((c) => BigInt(c.amount_micros)),
      [-50_000_000n],
    );
    await cancelToEnd(String(launched.body.batch_id));
  });

  it('the API killed right after starting a launch: the run is charged once and runs; the retry finds it', async () => {
    const org = await newOrg(20);
    const modes = await demoModes(org.orgId);
    const body = { model: modes.strong.B, questions: { easy: 2, medium: 1 } };
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-launch-crash-'));
    let api: { child: ChildProcess; url: string } | undefined;
    const before = await balanceOf(org.orgId);
    try {
      api = await startApiProcess(stackProcessEnv(dataDir, { QUORUM_FORM: 'B', QUORUM_FAULT: 'launch:after-start' }));
      const exited = new Promise((r) => api?.child.once('exit', r));
      await assert.rejects(
        fetch(`${api.url}/v1/tests`, {
          method: 'POST',
          headers: { authorization: `Bearer ${org.ownerKey}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }),
        'the API died mid-launch',
      );
      await exited;
    } finally {
      if (api?.child.exitCode === null) api.child.kill('SIGKILL');
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
    // The client retries the same request on another API: the launch it lost is the answer.
    const retry = await call(apis.B, 'POST', '/v1/tests', { key: org.ownerKey, body });
    assert.equal(retry.status, 200, JSON.stringify(retry.body));
    const runs = (await stack().db('runs').where({ org_id: org.orgId })) as { id: string; billed_micros: string }[];
    assert.equal(runs.length, 1, 'one run');
    assert.equal(runs[0].id, retry.body.batch_id);
    assert.equal((await chargesOf(org.orgId, runs[0].id)).length, 1, 'charged once');
    const ended = await untilEnded(apis.B, org.ownerKey, 'tests', runs[0].id);
    assert.equal((ended.body.batch as { state: string }).state, 'completed');
    const refunded = await stack()
      .db('ledger_entries')
      .where({ org_id: org.orgId, kind: 'run_refund' })
      .sum<{ sum: string | null }[]>('amount_micros as sum');
    assert.equal(
      before - (await balanceOf(org.orgId)),
      BigInt(runs[0].billed_micros) - BigInt(refunded[0]?.sum ?? 0),
      'the balance moved by the charge less any refund',
    );
  });
});
