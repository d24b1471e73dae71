import assert from 'node:assert/strict';
import { stack } from '../../harness/stack';
import { startProductWorkers } from '../deliberation/helpers';
import { call, EXPRESS, FORMS, moneySnapshot, newKey, newOrg, PANEL, startApi, USER, type Api, type TestOrg } from './helpers';

const HIGH = { requestsPerMinute: 100_000 };

for (const form of FORMS) {
  describe(`hostile and unusual input, Form ${form}`, function () {
    this.timeout(60_000);
    let api: Api;
    let org: TestOrg;
    let key: string;
    let workers: { stop(): Promise<void> };

    before(async () => {
      [api, workers] = await Promise.all([startApi(form), startProductWorkers({})]);
      org = await newOrg();
      key = await newKey(org.orgId, { limits: HIGH });
    });
    after(async () => {
      await workers.stop();
      await api.close();
    });

    it('refuses a NUL or an unpaired surrogate in a message before anything runs, naming the message', async () => {
      const before = await moneySnapshot(org.orgId);
      for (const content of ['a\u0000b', 'x\ud800', '\udc00y']) {
        for (const path of ['/v1/chat/completions', '/v1/estimate']) {
          const messages = [...USER('Hello.'), { role: 'user', content }];
          const reply = await call(api, 'POST', path, { key, body: { model: PANEL[form], messages } });
          assert.equal(reply.status, 400, JSON.stringify(reply.body));
          assert.deepEqual([reply.body.error?.code, reply.body.error?.param], ['invalid_messages', 'messages[1].content']);
        }
      }
      assert.equal(await moneySnapshot(org.orgId), before);
      assert.equal((await stack().db('requests').where({ org_id: org.orgId })).length, 0, 'no request was claimed');
    });

    it("accepts OpenAI clients' text parts and developer role, and null stream and tier; refuses another part by its type", async () => {
      const testKey = await newKey(org.orgId, { keyKind: 'test', limits: HIGH });
      const messages = [
        { role: 'developer', content: 'Be brief.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is the capital' },
            { type: 'text', text: 'of France?' },
          ],
        },
      ];
      const ok = await call(api, 'POST', '/v1/chat/completions', {
        key: testKey,
        body: { model: EXPRESS[form], messages, stream: null, tier: null },
      });
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      const image = [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image_url', image_url: { url: 'x' } },
          ],
        },
      ];
      const refused = await call(api, 'POST', '/v1/chat/completions', { key, body: { model: PANEL[form], messages: image } });
      assert.deepEqual(
        [refused.status, refused.body.error?.code, refused.body.error?.param],
        [400, 'invalid_messages', 'messages[0].content[1]'],
      );
      assert.match(refused.body.error?.message ?? '', /image_url/);
    });

    it('a NUL in model is model_not_found, not a 500; a receipt id that is not one of ours is receipt_not_found', async () => {
      for (const path of ['/v1/chat/completions', '/v1/estimate']) {
        const reply = await call(api, 'POST', path, { key, body: { model: 'QRM\u0000PANL', messages: USER('Hi') } });
        assert.deepEqual([reply.status, reply.body.error?.code], [404, 'model_not_found']);
      }
      for (const id of ['req_%00abc', 'req_%F0%9F%92%A9', `req_${'a'.repeat(24)}%20`]) {
        const reply = await call(api, 'GET', `/v1/receipts/${id}`, { key });
        assert.deepEqual([reply.status, reply.body.error?.code], [404, 'receipt_not_found'], id);
      }
    });

    it('a receipt id with a trailing space does not resolve to the id without it', async () => {
      const testKey = await newKey(org.orgId, { keyKind: 'test', limits: HIGH });
      const done = await call(api, 'POST', '/v1/chat/completions', {
        key: testKey,
        body: { model: EXPRESS[form], messages: USER('Name a colour.') },
      });
      const id = String(done.body.svc?.request_id);
      assert.equal((await call(api, 'GET', `/v1/receipts/${id}`, { key })).status, 200);
      assert.equal((await call(api, 'GET', `/v1/receipts/${id}%20`, { key })).status, 404);
    });

    it('the id of a request refused before it ran reads as a receipt that is not available, with the reason', async () => {
      const poor = await newOrg(0);
      // Drain the trial credit so the balance cannot cover a call.
      await stack().db.raw('update balances set reserved_micros = balance_micros where org_id = ?', [poor.orgId]);
      const refused = [
        await call(api, 'POST', '/v1/chat/completions', { key: poor.ownerKey, body: { model: PANEL[form], messages: [] } }),
        await call(api, 'POST', '/v1/chat/completions', { key: poor.ownerKey, body: { model: PANEL[form], messages: USER('Hi') } }),
      ];
      // The drain was written past the ledger: the balance back to what its ledger says (the suite's audit checks it).
      await stack().db.raw('update balances set reserved_micros = 0 where org_id = ?', [poor.orgId]);
      assert.deepEqual(
        refused.map((r) => [r.status, r.body.error?.code]),
        [
          [400, 'invalid_messages'],
          [402, 'insufficient_balance'],
        ],
      );
      for (const r of refused) {
        const receipt = await call(api, 'GET', `/v1/receipts/${String(r.body.svc?.request_id)}`, { key: poor.ownerKey });
        assert.deepEqual([receipt.status, receipt.body.receipt_available, 'receipt' in receipt.body], [200, false, false]);
        assert.match(String(receipt.body.reason), new RegExp(`refused before it ran \\(${String(r.body.error?.code)}\\)`));
      }
    });

    it('a body over the limit is 413 request_too_large with the limit in the message', async () => {
      const reply = await call(api, 'POST', '/v1/chat/completions', {
        key,
        body: { model: PANEL[form], messages: USER('x'.repeat(300 * 1024)) },
      });
      assert.deepEqual([reply.status, reply.body.error?.code], [413, 'request_too_large']);
      assert.match(reply.body.error?.message ?? '', /262144/);
    });

    it('a browser Origin is refused on every method and path under /v1 and /mcp, preflights and unknown paths included', async () => {
      for (const [method, path] of [
        ['OPTIONS', '/v1/chat/completions'],
        ['DELETE', '/v1/models'],
        ['GET', '/v1/nothing-here'],
        ['POST', '/mcp'],
        ['GET', '/mcp'],
      ]) {
        const reply = await call(api, method, path, { key, headers: { origin: 'https://example.com' } });
        assert.deepEqual([reply.status, reply.body.error?.code], [403, 'browser_origin_not_allowed'], `${method} ${path}`);
      }
    });

    it('every 405 names the allowed methods; every /v1 error carries svc.request_id, null where no request id exists', async () => {
      const wrong = await call(api, 'DELETE', '/v1/models', { key });
      assert.equal(wrong.status, 405);
      assert.equal(wrong.headers.get('allow'), 'HEAD, GET');
      const models = await call(api, 'GET', '/v1/models', { key: 'qrm_live_nope' });
      assert.equal(models.status, 401);
      assert.deepEqual(models.body.svc, { request_id: null });
      const completion = await call(api, 'POST', '/v1/chat/completions', { key, body: { model: PANEL[form] } });
      assert.match(String(completion.body.svc?.request_id), /^req_[0-9a-f]{24}$/);
    });

    it('the derived idempotency key includes the tier and the overrides: the same messages at another tier run again', async () => {
      const testKey = await newKey(org.orgId, { keyKind: 'test', limits: HIGH });
      const body = { model: PANEL[form], messages: USER('Explain, step by step, why ice floats on water.') };
      const first = await call(api, 'POST', '/v1/chat/completions', { key: testKey, body });
      const again = await call(api, 'POST', '/v1/chat/completions', { key: testKey, body });
      assert.equal(again.body.svc?.replayed, true);
      assert.equal(again.body.svc?.request_id, first.body.svc?.request_id);
      const other = form === 'B' ? { ...body, tier: 'pro' } : { ...body, svc: { note: 'another override' } };
      const third = await call(api, 'POST', '/v1/chat/completions', { key: testKey, body: other });
      assert.equal(third.status, 200, JSON.stringify(third.body));
      assert.notEqual(third.body.svc?.request_id, first.body.svc?.request_id);
      assert.equal(third.body.svc?.replayed, undefined);
    });

    if (form === 'B') {
      it('any positive svc.max_cost_usd is a ceiling (spec 01): a billionth of a dollar runs the panel and bills one micro-dollar', async () => {
        const body = {
          model: PANEL.B,
          messages: USER(`Explain, step by step, why ice floats on water. ${org.orgId}`),
          tier: 'pro',
          svc: { max_cost_usd: 1e-9 },
        };
        const reply = await call(api, 'POST', '/v1/chat/completions', { key, body });
        assert.equal(reply.status, 200, JSON.stringify(reply.body));
        // Finer than a micro-dollar, the ceiling is rounded down to whole micros, never below one.
        assert.deepEqual([reply.body.svc?.capped, reply.body.svc?.billed_usd], [true, 0.000001]);
      });
    }

    if (form === 'A') {
      it('svc.max_cost_usd is not a Form A field: ignored, never a ceiling', async () => {
        const testKey = await newKey(org.orgId, { keyKind: 'test', limits: HIGH });
        const body = { model: PANEL.A, messages: USER('Explain, step by step, why ice floats on water.'), svc: { max_cost_usd: 1e-9 } };
        const reply = await call(api, 'POST', '/v1/chat/completions', { key: testKey, body });
        assert.equal(reply.status, 200, JSON.stringify(reply.body));
        assert.notEqual(reply.body.choices && (reply.body.choices as { finish_reason: string }[])[0].finish_reason, 'cost_cap');
      });

      it('a replay reports what this request billed: nothing; the receipt keeps the original charge', async () => {
        const headers = { 'idempotency-key': `replay-${org.orgId}` };
        const body = { model: EXPRESS.A, messages: USER('Name a planet.') };
        const first = await call(api, 'POST', '/v1/chat/completions', { key, body, headers });
        const billed = Number(first.body.svc?.billed_usd);
        assert.ok(billed > 0);
        const replay = await call(api, 'POST', '/v1/chat/completions', { key, body, headers });
        assert.deepEqual([replay.body.svc?.replayed, replay.body.svc?.billed_usd, replay.body.svc?.surcharge_usd], [true, 0, 0]);
        const receipt = await call(api, 'GET', `/v1/receipts/${String(first.body.svc?.request_id)}`, { key });
        assert.equal((receipt.body.receipt as { billed_usd: number }).billed_usd, billed);
      });
    }
  });
}
