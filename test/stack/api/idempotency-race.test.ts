import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { stack } from '../../harness/stack';
import { startProductWorkers } from '../deliberation/helpers';
import { call, newKey, newOrg, PANEL, startApi, type Api, type Reply } from './helpers';

/**
 * One key is at most one billed run, ever (issue 26 item 4; DESIGN §4: the workflow id is the lock). Many identical
 * requests at once, with a key or without (the derived key), get the run's answer or 409 request_in_progress, and
 * the organisation is charged once; asked again after the run ended, every one is the replay.
 */
describe('idempotency under races: one key, one run, one charge', function () {
  this.timeout(180_000);
  let workers: { stop(): Promise<void> };
  const apis: Api[] = [];

  before(async () => {
    // Engines slow enough that the first run is still going while the others arrive.
    workers = await startProductWorkers({ QUORUM_SIM_LATENCY: 'fixed:400' });
    // Two API instances, as behind a load balancer: the race is between processes' claims, not within one.
    apis.push(await startApi('B'), await startApi('B'));
  });
  after(async () => {
    for (const api of apis) await api.close();
    await workers.stop();
  });

  async function wave(key: string, idempotencyKey: string | undefined, body: unknown, n: number): Promise<Reply[]> {
    const headers: Record<string, string> = idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {};
    return Promise.all(
      Array.from({ length: n }, (_, i) => call(apis[i % apis.length], 'POST', '/v1/chat/completions', { key, body, headers })),
    );
  }

  async function chargesFor(orgId: string): Promise<number> {
    const rows = await stack().db('ledger_entries').where({ org_id: orgId, kind: 'charge' }).count<{ n: string }[]>('* as n');
    return Number(rows[0]?.n ?? 0);
  }

  for (const withHeader of [true, false]) {
    it(`${withHeader ? 'with an Idempotency-Key' : 'without one (the derived key)'}: every answer is the one run or a 409, charged once`, async () => {
      const org = await newOrg(20);
      // Room for every request at once: the race is between claims, not against the concurrency limit (its own 429).
      const key = await newKey(org.orgId, { limits: { concurrency: 50 } });
      const body = { model: PANEL.B, messages: [{ role: 'user', content: `Why is the sky blue? ${randomUUID()}` }] };
      const idem = withHeader ? randomUUID() : undefined;
      for (let round = 0; round < 3; round++) {
        const replies = await wave(key, idem, body, 12);
        for (const r of replies)
          assert.ok(
            r.status === 200 || (r.status === 409 && r.body.error?.code === 'request_in_progress'),
            `round ${round}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`,
          );
        const answered = new Set(replies.filter((r) => r.status === 200).map((r) => (r.body.svc as { request_id: string }).request_id));
        assert.ok(answered.size <= 1, `one answer for the key, got ${[...answered].join(', ')}`);
        if (round === 0) assert.equal(answered.size, 1, 'the first wave ran the call once');
      }
      // After the run: every identical request is the replay of that one answer.
      const last = await wave(key, idem, body, 6);
      assert.ok(
        last.every((r) => r.status === 200 && (r.body.svc as { replayed?: boolean }).replayed === true),
        JSON.stringify(last[0]?.body),
      );
      assert.equal(await chargesFor(org.orgId), 1, 'charged once');
      const succeeded = await stack().db('requests').where({ org_id: org.orgId, state: 'succeeded' }).count<{ n: string }[]>('* as n');
      assert.equal(Number(succeeded[0]?.n), 1, 'one answered request');
      const running = await stack().db('requests').where({ org_id: org.orgId, state: 'running' }).count<{ n: string }[]>('* as n');
      assert.equal(Number(running[0]?.n), 0, 'no claim left running');
    });
  }
});
