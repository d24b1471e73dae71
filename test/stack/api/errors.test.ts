import assert from 'node:assert/strict';
import { revokeApiKey, createApiKey } from '../../../db/repositories/api-keys';
import { acquireLease, releaseLease } from '../../../db/repositories/limits';
import { systemModeConfig } from './fixtures';
import { upsertMode } from '../../../db/repositories/modes';
import { setOrganisationStatus } from '../../../db/repositories/organisations';
import { claimRequest } from '../../../db/repositories/requests';
import { stack } from '../../harness/stack';
import { call, EXPRESS, FORMS, moneySnapshot, newKey, newOrg, PANEL, startApi, USER, type Api, type Reply, type TestOrg } from './helpers';
import { uniqueTicker } from '../../harness/unique';

const HIGH = { requestsPerMinute: 100_000 };

function expectError(reply: Reply, status: number, type: string, code: string, param: string | null = null): void {
  assert.equal(reply.status, status, JSON.stringify(reply.body));
  assert.deepEqual(
    [reply.body.error?.type, reply.body.error?.code, reply.body.error?.param],
    [type, code, param],
    JSON.stringify(reply.body),
  );
  assert.equal(typeof reply.body.error?.message, 'string');
}

function expectRetryAfter(reply: Reply, max: number): void {
  const header = reply.headers.get('retry-after');
  assert.match(header ?? '', /^\d+$/, 'Retry-After must be integer seconds');
  assert.ok(Number(header) >= 1 && Number(header) <= max);
}

for (const form of FORMS) {
  describe(`API errors, Form ${form}`, () => {
    let api: Api;
    let org: TestOrg;
    let key: string;
    let moneyBefore: string;
    const valid = (): { model: string; messages: { role: 'user'; content: string }[] } => ({
      model: PANEL[form],
      messages: USER('What is 2+2?'),
    });

    before(async () => {
      api = await startApi(form);
      org = await newOrg();
      key = await newKey(org.orgId, { limits: HIGH });
      moneyBefore = await moneySnapshot(org.orgId);
    });
    after(async () => {
      // Not one rejected request may have touched the money.
      assert.equal(await moneySnapshot(org.orgId), moneyBefore);
      await api.close();
    });

    it('browser_origin_not_allowed: 403 on every endpoint, before the key is even read', async () => {
      for (const [method, path] of [
        ['POST', '/v1/chat/completions'],
        ['POST', '/v1/estimate'],
        ['GET', '/v1/models'],
        ['GET', '/v1/receipts/req_x'],
      ]) {
        const reply = await call(api, method, path, {
          key,
          headers: { origin: 'https://example.com' },
          body: method === 'POST' ? valid() : undefined,
        });
        expectError(reply, 403, 'permission_error', 'browser_origin_not_allowed');
      }
      expectError(
        await call(api, 'GET', '/v1/models', { headers: { origin: 'null' } }),
        403,
        'permission_error',
        'browser_origin_not_allowed',
      );
    });

    it('invalid_api_key: missing, malformed, unknown', async () => {
      expectError(await call(api, 'GET', '/v1/models'), 401, 'authentication_error', 'invalid_api_key');
      expectError(
        await call(api, 'GET', '/v1/models', { headers: { authorization: 'Basic abc' } }),
        401,
        'authentication_error',
        'invalid_api_key',
      );
      expectError(await call(api, 'GET', '/v1/models', { key: 'qrm_live_short' }), 401, 'authentication_error', 'invalid_api_key');
      expectError(
        await call(api, 'POST', '/v1/estimate', { key: `qrm_live_${'A'.repeat(32)}`, body: valid() }),
        401,
        'authentication_error',
        'invalid_api_key',
      );
    });

    it('revoked_api_key', async () => {
      const { keyId, apiKey } = await createApiKey(stack().db, { orgId: org.orgId, keyKind: 'live' });
      await revokeApiKey(stack().db, keyId);
      expectError(
        await call(api, 'POST', '/v1/chat/completions', { key: apiKey, body: valid() }),
        401,
        'authentication_error',
        'revoked_api_key',
      );
    });

    it('org_suspended', async () => {
      const other = await newOrg();
      await setOrganisationStatus(stack().db, other.orgId, 'suspended');
      expectError(await call(api, 'GET', '/v1/models', { key: other.ownerKey }), 403, 'permission_error', 'org_suspended');
    });

    it('insufficient_scope: for the endpoint, and for a mode the key is not limited to', async () => {
      const modelsOnly = await newKey(org.orgId, { scopes: ['models'], limits: HIGH });
      expectError(
        await call(api, 'POST', '/v1/chat/completions', { key: modelsOnly, body: valid() }),
        403,
        'permission_error',
        'insufficient_scope',
      );
      expectError(
        await call(api, 'POST', '/v1/estimate', { key: modelsOnly, body: valid() }),
        403,
        'permission_error',
        'insufficient_scope',
      );
      expectError(await call(api, 'GET', '/v1/receipts/req_x', { key: modelsOnly }), 403, 'permission_error', 'insufficient_scope');
      const expressOnly = await newKey(org.orgId, { allowedModes: ['quorum-express'], limits: HIGH });
      expectError(
        await call(api, 'POST', '/v1/chat/completions', { key: expressOnly, body: valid() }),
        403,
        'permission_error',
        'insufficient_scope',
        'model',
      );
      const list = await call(api, 'GET', '/v1/models', { key: expressOnly });
      assert.deepEqual(
        (list.body.data as { id: string }[]).map((m) => m.id),
        [EXPRESS[form]],
      );
    });

    it('invalid_model: missing or not a string', async () => {
      expectError(
        await call(api, 'POST', '/v1/estimate', { key, body: { messages: USER('hi') } }),
        400,
        'invalid_request_error',
        'invalid_model',
        'model',
      );
      expectError(
        await call(api, 'POST', '/v1/estimate', { key, body: { model: 7, messages: USER('hi') } }),
        400,
        'invalid_request_error',
        'invalid_model',
        'model',
      );
      expectError(
        await call(api, 'POST', '/v1/chat/completions', { key, body: { model: ['x'], messages: USER('hi') } }),
        400,
        'invalid_request_error',
        'invalid_model',
        'model',
      );
    });

    it(`completions without model: ${form === 'B' ? 'invalid_messages (spec 01, Form B)' : 'invalid_model'}`, async () => {
      const reply = await call(api, 'POST', '/v1/chat/completions', { key, body: { messages: USER('hi') } });
      expectError(reply, 400, 'invalid_request_error', form === 'B' ? 'invalid_messages' : 'invalid_model', 'model');
    });

    it('invalid_messages: missing, empty, wrong role, non-string content', async () => {
      for (const messages of [
        undefined,
        [],
        [{ role: 'robot', content: 'x' }],
        [{ role: 'user', content: 5 }],
        'hello',
        [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.invalid/a.png' } }] }],
      ]) {
        // The whole field, or the one message at fault.
        const param = Array.isArray(messages) && messages.length > 0 ? /^messages\[0\]\.(role|content)/ : /^messages$/;
        for (const path of ['/v1/chat/completions', '/v1/estimate']) {
          const reply = await call(api, 'POST', path, { key, body: { model: PANEL[form], messages } });
          assert.equal(reply.status, 400, JSON.stringify(reply.body));
          assert.equal(reply.body.error?.code, 'invalid_messages');
          assert.match(reply.body.error?.param ?? '', param);
        }
      }
    });

    it('stream_not_supported', async () => {
      expectError(
        await call(api, 'POST', '/v1/chat/completions', { key, body: { ...valid(), stream: true } }),
        400,
        'invalid_request_error',
        'stream_not_supported',
        'stream',
      );
    });

    it('svc.answer_kind (issue 52): another value is 400 invalid_request naming it and the values, on completions and responses', async () => {
      for (const kind of ['math', 'NUMBER', 7]) {
        const completion = await call(api, 'POST', '/v1/chat/completions', { key, body: { ...valid(), svc: { answer_kind: kind } } });
        expectError(completion, 400, 'invalid_request_error', 'invalid_request', 'svc.answer_kind');
        assert.match(String(completion.body.error?.message), /choice, yes_no, number, short_text/);
        const response = await call(api, 'POST', '/v1/responses', {
          key,
          body: { model: PANEL[form], input: 'What is 2+2?', svc: { answer_kind: kind } },
        });
        expectError(response, 400, 'invalid_request_error', 'invalid_request', 'svc.answer_kind');
      }
    });

    if (form === 'B') {
      it('invalid_tier (Form B)', async () => {
        // `null` means absent (as clients send an unset option), so it is not among these.
        for (const tier of ['ultra', 3, 'PLUS']) {
          expectError(
            await call(api, 'POST', '/v1/chat/completions', { key, body: { ...valid(), tier } }),
            400,
            'invalid_request_error',
            'invalid_tier',
            'tier',
          );
        }
      });

      it('invalid_max_cost_usd (Form B)', async () => {
        for (const max of [0, -1, '5', null, true]) {
          const reply = await call(api, 'POST', '/v1/chat/completions', { key, body: { ...valid(), svc: { max_cost_usd: max } } });
          expectError(reply, 400, 'invalid_request_error', 'invalid_max_cost_usd', 'svc.max_cost_usd');
        }
      });

      it('mode_not_published (Form B) for an own unpublished mode; Form A would say model_not_found', async () => {
        const mode = await upsertMode(stack().db, {
          id: `draft-${org.orgId.slice(4, 12).toLowerCase()}`,
          ticker: uniqueTicker('DRFT'),
          orgId: org.orgId,
          name: 'Draft',
          description: null,
          useWhen: 'never',
          published: false,
          config: systemModeConfig(),
        });
        expectError(
          await call(api, 'POST', '/v1/estimate', { key, body: { model: mode.ticker, messages: USER('hi') } }),
          403,
          'permission_error',
          'mode_not_published',
          'model',
        );
      });
    } else {
      it('Form A has no tier or max_cost_usd: they are ignored, not rejected', async () => {
        // A key whose input limit stops every prompt shows the body passed validation.
        const tiny = await newKey(org.orgId, { limits: { ...HIGH, maxInputTokens: 1 } });
        const reply = await call(api, 'POST', '/v1/chat/completions', {
          key: tiny,
          body: { ...valid(), tier: 'ultra', svc: { max_cost_usd: -1 } },
        });
        expectError(reply, 413, 'invalid_request_error', 'context_length_exceeded', 'messages');
      });
    }

    it("model_not_found: unknown, the other Form's name, another organisation's mode", async () => {
      const other = form === 'A' ? PANEL.B : PANEL.A;
      for (const model of ['nope', other, 'QRM:ZZZZ']) {
        expectError(
          await call(api, 'POST', '/v1/chat/completions', { key, body: { model, messages: USER('hi') } }),
          404,
          'invalid_request_error',
          'model_not_found',
          'model',
        );
        expectError(
          await call(api, 'POST', '/v1/estimate', { key, body: { model, messages: USER('hi') } }),
          404,
          'invalid_request_error',
          'model_not_found',
          'model',
        );
      }
      const stranger = await newOrg();
      const theirs = await upsertMode(stack().db, {
        id: `theirs-${stranger.orgId.slice(4, 12).toLowerCase()}`,
        ticker: uniqueTicker('MINE'),
        orgId: stranger.orgId,
        name: 'Theirs',
        description: null,
        useWhen: 'x',
        published: true,
        config: systemModeConfig(),
      });
      const name = form === 'A' ? theirs.id : theirs.ticker;
      expectError(
        await call(api, 'POST', '/v1/estimate', { key, body: { model: name, messages: USER('hi') } }),
        404,
        'invalid_request_error',
        'model_not_found',
        'model',
      );
      // Another organisation's lab version: Form B says so (403 lab_not_available); Form A has no tickers at all.
      const lab = await call(api, 'POST', '/v1/estimate', { key, body: { model: `${theirs.ticker}:LAB`, messages: USER('hi') } });
      if (form === 'B') expectError(lab, 403, 'permission_error', 'lab_not_available', 'model');
      else expectError(lab, 404, 'invalid_request_error', 'model_not_found', 'model');
    });

    it('missing_request_id', async () => {
      expectError(await call(api, 'GET', '/v1/receipts/', { key }), 400, 'invalid_request_error', 'missing_request_id', 'request_id');
      // `/v1/receipts` without the slash lists the calls (issue 41; test/stack/api/usage.test.ts).
      expectError(await call(api, 'GET', '/v1/receipts/%20', { key }), 400, 'invalid_request_error', 'missing_request_id', 'request_id');
    });

    it("receipt_not_found: unknown id, and another organisation's request (never partial)", async () => {
      expectError(
        await call(api, 'GET', '/v1/receipts/req_unknown', { key }),
        404,
        'invalid_request_error',
        'receipt_not_found',
        'request_id',
      );
      const owner = await newOrg();
      const requestId = `req_${owner.orgId.slice(4)}${form}`;
      await claimRequest(
        stack().db,
        {
          id: requestId,
          orgId: owner.orgId,
          apiKeyId: owner.keyId,
          idempotencyKey: requestId,
          workflowId: `dlb/${owner.orgId}/${requestId}`,
          fingerprint: 'f',
          modeId: 'quorum-panel',
          model: PANEL[form],
        },
        { takeOver: [] },
      );
      expectError(
        await call(api, 'GET', `/v1/receipts/${requestId}`, { key }),
        404,
        'invalid_request_error',
        'receipt_not_found',
        'request_id',
      );
      // Its own organisation sees that no receipt exists yet.
      const own = await call(api, 'GET', `/v1/receipts/${requestId}`, { key: owner.ownerKey });
      assert.equal(own.status, 200);
      assert.equal(own.body.ok, true);
      assert.equal(own.body.receipt_available, false);
      assert.equal(typeof own.body.reason, 'string');
      assert.equal('receipt' in own.body, false);
      assert.equal(own.body.request_id, form === 'B' ? requestId : undefined);
      assert.equal(own.body.status, form === 'B' ? 'running' : undefined);
    });

    it('method_not_allowed on known paths; not_found elsewhere', async () => {
      expectError(await call(api, 'GET', '/v1/chat/completions', { key }), 405, 'invalid_request_error', 'method_not_allowed');
      expectError(await call(api, 'DELETE', '/v1/models', { key }), 405, 'invalid_request_error', 'method_not_allowed');
      expectError(await call(api, 'PUT', '/v1/estimate', { key }), 405, 'invalid_request_error', 'method_not_allowed');
      expectError(await call(api, 'POST', '/v1/receipts/req_1', { key }), 405, 'invalid_request_error', 'method_not_allowed');
      expectError(await call(api, 'GET', '/v1/nothing', { key }), 404, 'invalid_request_error', 'not_found');
    });

    it("context_length_exceeded: over the default 8,000 tokens, and over a key's own limit", async () => {
      const long = 'lorem ipsum dolor sit amet '.repeat(2_000);
      expectError(
        await call(api, 'POST', '/v1/chat/completions', { key, body: { model: PANEL[form], messages: USER(long) } }),
        413,
        'invalid_request_error',
        'context_length_exceeded',
        'messages',
      );
      const small = await newKey(org.orgId, { limits: { ...HIGH, maxInputTokens: 20 } });
      const reply = await call(api, 'POST', '/v1/chat/completions', {
        key: small,
        body: { model: PANEL[form], messages: USER('one two three four five six seven eight nine ten eleven twelve thirteen fourteen') },
      });
      expectError(reply, 413, 'invalid_request_error', 'context_length_exceeded', 'messages');
      assert.match(String(reply.body.svc?.request_id), /^req_/);
      // A pathological unbroken run is refused quickly, not tokenised for seconds.
      const started = Date.now();
      expectError(
        await call(api, 'POST', '/v1/estimate', { key, body: { model: PANEL[form], messages: USER('é'.repeat(120_000)) } }),
        413,
        'invalid_request_error',
        'context_length_exceeded',
        'messages',
      );
      assert.ok(Date.now() - started < 2_000, `took ${Date.now() - started} ms`);
    });

    it('invalid_request: not JSON, not an object, bad Idempotency-Key; request_too_large over the body limit', async () => {
      for (const raw of ['{', 'null', '[1]', '"x"', '']) {
        expectError(
          await call(api, 'POST', '/v1/chat/completions', { key, raw, headers: { 'content-type': 'application/json' } }),
          400,
          'invalid_request_error',
          'invalid_request',
        );
      }
      const huge = JSON.stringify({ model: PANEL[form], messages: USER('x'.repeat(300_000)) });
      expectError(await call(api, 'POST', '/v1/estimate', { key, raw: huge }), 413, 'invalid_request_error', 'request_too_large');
      const reply = await call(api, 'POST', '/v1/chat/completions', { key, body: valid(), headers: { 'idempotency-key': 'has space' } });
      expectError(reply, 400, 'invalid_request_error', 'invalid_request', 'Idempotency-Key');
    });
  });
}

/** The per-minute window is a fixed clock minute: start a counting test well inside one, so it cannot straddle two. */
async function insideOneMinute(): Promise<void> {
  const intoMinute = Date.now() % 60_000;
  if (intoMinute > 50_000) await new Promise((r) => setTimeout(r, 60_000 - intoMinute + 200));
}

describe('API limits (Postgres-backed, shared by every API process)', function () {
  this.timeout(120_000);
  let a: Api;
  let b: Api;
  before(async () => {
    [a, b] = await Promise.all([startApi('A'), startApi('B')]);
  });
  after(async () => {
    await a.close();
    await b.close();
  });

  it('rate_limit_exceeded: requests per minute per key across two API processes, with Retry-After', async () => {
    const org = await newOrg();
    const key = await newKey(org.orgId, { limits: { requestsPerMinute: 3 } });
    await insideOneMinute();
    const replies: Reply[] = [];
    for (let i = 0; i < 5; i++) replies.push(await call(i % 2 ? b : a, 'GET', '/v1/models', { key }));
    assert.deepEqual(
      replies.map((r) => r.status),
      [200, 200, 200, 429, 429],
    );
    expectError(replies[3], 429, 'rate_limit_error', 'rate_limit_exceeded');
    expectRetryAfter(replies[3], 60);
    // Another key of the same organisation has its own window.
    assert.equal((await call(a, 'GET', '/v1/models', { key: org.ownerKey })).status, 200);
  });

  it("a request the gate refuses is not counted toward the key's requests per minute; an admitted one is, once", async () => {
    const org = await newOrg();
    const body = { model: PANEL.A, messages: USER('What is the capital of France?') };
    const statuses = async (n: number, send: () => Promise<Reply>): Promise<number[]> => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push((await send()).status);
      return out;
    };
    await insideOneMinute();
    // Refused for its scope, three times, by a key allowed two requests a minute: its two are still whole.
    const modelsOnly = await newKey(org.orgId, { scopes: ['models'], limits: { requestsPerMinute: 2 } });
    assert.deepEqual(await statuses(3, () => call(a, 'POST', '/v1/estimate', { key: modelsOnly, body })), [403, 403, 403]);
    const first = await call(a, 'GET', '/v1/models', { key: modelsOnly });
    assert.equal(first.headers.get('x-ratelimit-remaining-requests'), '1');
    assert.deepEqual(await statuses(2, () => call(b, 'GET', '/v1/models', { key: modelsOnly })), [200, 429]);
    // An admin key calls nothing; refused there, its requests on the account's routes are still whole.
    const admin = (await createApiKey(stack().db, { orgId: org.orgId, keyKind: 'admin', limits: { requestsPerMinute: 2 } })).apiKey;
    assert.deepEqual(await statuses(3, () => call(a, 'POST', '/v1/estimate', { key: admin, body })), [403, 403, 403]);
    assert.deepEqual(await statuses(3, () => call(a, 'GET', '/v1/balance', { key: admin })), [200, 200, 429]);
    // A revoked key and a suspended organisation's key: refused, never counted, whole again once usable.
    const revoked = await createApiKey(stack().db, { orgId: org.orgId, keyKind: 'live', limits: { requestsPerMinute: 2 } });
    await stack().db('api_keys').where({ id: revoked.keyId }).update({ revoked_at: stack().db.fn.now() });
    assert.deepEqual(await statuses(3, () => call(a, 'POST', '/v1/estimate', { key: revoked.apiKey, body })), [401, 401, 401]);
    await stack().db('api_keys').where({ id: revoked.keyId }).update({ revoked_at: null });
    assert.deepEqual(await statuses(3, () => call(a, 'POST', '/v1/estimate', { key: revoked.apiKey, body })), [200, 200, 429]);
    const other = await newOrg();
    const suspendedKey = await newKey(other.orgId, { limits: { requestsPerMinute: 2 } });
    await setOrganisationStatus(stack().db, other.orgId, 'suspended');
    assert.deepEqual(await statuses(3, () => call(a, 'POST', '/v1/estimate', { key: suspendedKey, body })), [403, 403, 403]);
    await setOrganisationStatus(stack().db, other.orgId, 'active');
    assert.deepEqual(await statuses(3, () => call(a, 'POST', '/v1/estimate', { key: suspendedKey, body })), [200, 200, 429]);
  });

  it('the default is 60 per minute', async () => {
    const org = await newOrg();
    await insideOneMinute();
    const statuses = await Promise.all(
      Array.from({ length: 62 }, (_, i) =>
        call(i % 2 ? a : b, 'GET', '/v1/receipts/req_none', { key: org.ownerKey }).then((r) => r.status),
      ),
    );
    assert.equal(statuses.filter((s) => s === 404).length, 60);
    assert.equal(statuses.filter((s) => s === 429).length, 2);
  });

  it('concurrency_limit_exceeded: calls in flight per organisation, with Retry-After; slots free again', async () => {
    const org = await newOrg();
    const key = await newKey(org.orgId, { limits: { concurrency: 2, requestsPerMinute: 1000 } });
    const held = [await acquireLease(stack().db, org.orgId, 2), await acquireLease(stack().db, org.orgId, 2)];
    const body = { model: PANEL.A, messages: USER('What is the capital of France?') };
    const busy = await call(a, 'POST', '/v1/estimate', { key, body });
    expectError(busy, 429, 'rate_limit_error', 'concurrency_limit_exceeded');
    expectRetryAfter(busy, 60);
    expectError(await call(a, 'POST', '/v1/chat/completions', { key, body }), 429, 'rate_limit_error', 'concurrency_limit_exceeded');
    await releaseLease(stack().db, held[0] ?? '');
    assert.equal((await call(a, 'POST', '/v1/estimate', { key, body })).status, 200);
    // The default is 5 per organisation.
    const other = await newOrg();
    for (let i = 0; i < 5; i++) assert.ok(await acquireLease(stack().db, other.orgId, 5));
    expectError(
      await call(b, 'POST', '/v1/estimate', { key: other.ownerKey, body: { model: PANEL.B, messages: USER('hi') } }),
      429,
      'rate_limit_error',
      'concurrency_limit_exceeded',
    );
  });

  it('an expired lease (a crashed API process) frees its slot', async () => {
    const org = await newOrg();
    const key = await newKey(org.orgId, { limits: { concurrency: 1 } });
    const lease = await acquireLease(stack().db, org.orgId, 1);
    assert.ok(lease);
    await stack()
      .db('concurrency_leases')
      .where({ id: lease })
      .update({ expires_at: stack().db.raw("now() - interval '1 second'") });
    assert.equal((await call(a, 'POST', '/v1/estimate', { key, body: { model: PANEL.A, messages: USER('hi') } })).status, 200);
  });
});
