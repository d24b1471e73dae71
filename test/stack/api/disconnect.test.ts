import assert from 'node:assert/strict';
import http from 'node:http';
import { stack } from '../../harness/stack';
import { chargeCount, startProductWorkers } from '../deliberation/helpers';
import { newOrg, startApi, type Api } from './helpers';

/** DESIGN §1: a client that hangs up does not cancel the run; it finishes, bills once, and a retry replays it. */
describe('a client that disconnects mid-call', function () {
  this.timeout(60_000);
  let api: Api;
  let workers: { stop(): Promise<void> };
  before(async () => {
    workers = await startProductWorkers({ QUORUM_SIM_LATENCY: 'fixed:1500' });
    api = await startApi('B');
  });
  after(async () => {
    await api.close();
    await workers.stop();
  });

  it('does not cancel the deliberation: it completes, is charged once, and the retry with its key is a replay', async () => {
    const org = await newOrg();
    const body = JSON.stringify({ model: 'QRM:PANL', messages: [{ role: 'user', content: 'Why do leaves change colour in autumn?' }] });
    const headers = { authorization: `Bearer ${org.ownerKey}`, 'content-type': 'application/json', 'idempotency-key': 'hang-up' };

    // Send the request, then hang up while the seats are still answering.
    await new Promise<void>((resolve) => {
      const req = http.request(`${api.url}/v1/chat/completions`, { method: 'POST', headers });
      req.on('error', () => resolve());
      req.end(body);
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 500);
    });

    const deadline = Date.now() + 30_000;
    let state = 'running';
    while (state === 'running' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      state =
        (await stack().db('requests').where({ org_id: org.orgId, idempotency_key: 'hang-up' }).whereNull('superseded_at').first('state'))
          ?.state ?? 'running';
    }
    assert.equal(state, 'succeeded');
    assert.equal(await chargeCount(org.orgId), 1);

    const retry = await fetch(`${api.url}/v1/chat/completions`, { method: 'POST', headers, body });
    assert.equal(retry.status, 200);
    const json = (await retry.json()) as { svc: { replayed?: boolean } };
    assert.equal(json.svc.replayed, true);
    assert.equal(await chargeCount(org.orgId), 1);
  });
});
