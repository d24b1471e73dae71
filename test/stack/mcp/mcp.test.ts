import type { Progress } from '@modelcontextprotocol/sdk/types.js';
import assert from 'node:assert/strict';
import type { Form } from '../../../domain/form';
import { call, FORMS, moneySnapshot, newKey, newOrg, PANEL, startApi, type Api, type TestOrg } from '../api/helpers';
import { startProductWorkers } from '../deliberation/helpers';
import { limitedDb } from '../../harness/limited-db';
import { demoModes } from '../runs/helpers';
import { connect, json } from './helpers';

const QUESTION = [{ role: 'user', content: 'Compare two approaches to caching and explain the trade-offs, step by step. Why? How?' }];

describe('mcp: the server at /mcp, with the official SDK client', function () {
  this.timeout(120_000);
  const apis = {} as Record<Form, Api>;
  let workers: { stop(): Promise<void> };
  let org: TestOrg;

  before(async () => {
    // Engines that take a while, so a deliberation has steps to report.
    // Engine steps of 2 s: a panel (three to five steps) outlasts its workflow task's first heartbeat (at 4 s), when
    // the progress query is answered (starters/deliberation.ts).
    workers = await startProductWorkers({ QUORUM_SIM_LATENCY: 'fixed:2000' });
    for (const form of FORMS) apis[form] = await startApi(form, { runs: { testsPerDay: 20, certificationsPerDay: 3, window: 4 } });
    org = await newOrg(50);
  });
  after(async () => {
    for (const form of FORMS) await apis[form].close();
    await workers.stop();
  });

  it('lists 6 tools in Form A and 15 in Form B (the forwarding six, the mode builder’s four, the advisor’s three, list_runs and cancel_run), each with an input schema', async () => {
    for (const form of FORMS) {
      const client = await connect(apis[form], org.ownerKey);
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name).sort();
      const six = ['certify_mode', 'deliberate', 'estimate', 'get_receipt', 'list_modes', 'run_test'];
      const formB = [
        ...six,
        'list_engines',
        'list_mode',
        'save_mode',
        'validate_mode',
        'ask_advisor',
        'approve_quote',
        'advisor_propose_mode',
        // Issue 28, beyond spec 02's thirteen (docs/api-extensions.md).
        'list_runs',
        'cancel_run',
      ];
      assert.deepEqual(names, form === 'A' ? six : formB.sort());
      assert.equal(names.length, form === 'A' ? 6 : 15);
      for (const t of tools) {
        assert.equal(t.inputSchema.type, 'object');
        assert.ok((t.description ?? '').length > 40, `${t.name} says what it does, costs and takes`);
      }
      await client.close();
    }
  });

  it('deliberate sends progress notifications before its result; get_receipt then reads the receipt; estimate is free', async () => {
    const client = await connect(apis.B, org.ownerKey);
    const progress: { at: number; p: Progress }[] = [];
    const result = await client.callTool({ name: 'deliberate', arguments: { model: PANEL.B, messages: QUESTION } }, undefined, {
      onprogress: (p) => progress.push({ at: Date.now(), p }),
      resetTimeoutOnProgress: true,
    });
    const doneAt = Date.now();
    assert.ok(!result.isError, JSON.stringify(result));
    const body = json(result) as { choices: { message: { content: string } }[]; svc: { request_id: string; seats_answered: number } };
    assert.ok(body.choices[0].message.content.length > 0);
    // At least the step a heartbeat answered (a panel that skips its critique round spans only one).
    assert.ok(progress.length >= 1, `progress: ${JSON.stringify(progress.map((x) => x.p.message))}`);
    assert.ok(progress.every((x) => x.at <= doneAt));
    assert.ok(progress.some((x) => /seats answering: \d\/3|critique round \d|judging round \d|synthesising/.test(x.p.message ?? '')));
    for (let i = 1; i < progress.length; i++) assert.ok(progress[i].p.progress > progress[i - 1].p.progress, 'progress only grows');

    const receipt = json(await client.callTool({ name: 'get_receipt', arguments: { request_id: body.svc.request_id } }));
    assert.equal(receipt.receipt_available, true);
    assert.equal((receipt.receipt as { request_id: string }).request_id, body.svc.request_id);

    const before = await moneySnapshot(org.orgId);
    const quote = json(await client.callTool({ name: 'estimate', arguments: { model: PANEL.B, messages: QUESTION } }));
    assert.equal(quote.billed_usd, 0);
    assert.ok((quote.deliberation_value as { verdict: string }).verdict);
    assert.equal(await moneySnapshot(org.orgId), before);
    await client.close();
  });

  it('run_test and certify_mode return the batch id and status address at once; a test key bills nothing', async () => {
    const modes = await demoModes(org.orgId);
    const test = await newKey(org.orgId, { keyKind: 'test' });
    const before = await moneySnapshot(org.orgId);
    for (const form of FORMS) {
      const client = await connect(apis[form], test);
      const run = json(
        await client.callTool({
          name: 'run_test',
          arguments: { model: modes.weak[form], ...(form === 'A' ? { buckets: { light: 1 } } : { questions: { easy: 1 } }) },
        }),
      );
      assert.match(String(run.batch_id), /^[0-9a-f-]{36}$/);
      assert.equal(run.status_url, `${apis[form].url}/v1/tests?batch_id=${String(run.batch_id)}`);
      const dry = json(await client.callTool({ name: 'certify_mode', arguments: { model: modes.weak[form], dry_run: true } }));
      assert.equal(dry.dry_run, true);
      assert.equal(dry.total_questions, 150);
      await client.close();
    }
    assert.equal(await moneySnapshot(org.orgId), before);
  });

  it('shape 1: a forwarded tool returns the REST error object with http_status, codes unchanged', async () => {
    for (const form of FORMS) {
      const client = await connect(apis[form], org.ownerKey);
      const missing = await client.callTool({ name: 'deliberate', arguments: { model: 'NO:SUCH', messages: QUESTION } });
      assert.equal(missing.isError, true);
      const e = json(missing);
      assert.deepEqual(e.error, {
        message: (e.error as { message: string }).message,
        type: 'invalid_request_error',
        code: 'model_not_found',
        param: 'model',
      });
      assert.equal(e.http_status, 404);
      assert.equal(e.svc, undefined, 'no request was made, so no request id');
      const bad = json(
        await client.callTool({
          name: 'run_test',
          arguments: { model: 'x', ...(form === 'A' ? { buckets: { light: 0 } } : { questions: { light: 1 } }) },
        }),
      );
      assert.equal((bad.error as { code: string }).code, form === 'A' ? 'invalid_bucket_count' : 'invalid_difficulty');
      assert.equal(bad.http_status, 400);
      await client.close();
    }
  });

  it('shape 2: a self-answered tool returns error.code, error.message and http_status, detail in svc', async () => {
    const noModels = await newKey(org.orgId, { scopes: ['completions'] });
    const client = await connect(apis.B, noModels);
    const refused = await client.callTool({ name: 'list_engines', arguments: {} });
    assert.equal(refused.isError, true);
    const e = json(refused);
    assert.equal((e.error as { code: string }).code, 'insufficient_scope');
    assert.equal(typeof (e.error as { message: string }).message, 'string');
    assert.equal((e.error as { type?: string }).type, undefined);
    assert.equal(e.http_status, 403);
    await client.close();

    const owner = await connect(apis.B, org.ownerKey);
    const badTier = json(await owner.callTool({ name: 'list_engines', arguments: { tier: 'gold' } }));
    assert.equal((badTier.error as { code: string }).code, 'invalid_request');
    assert.equal(badTier.svc?.param, 'tier');
    const engines = json(await owner.callTool({ name: 'list_engines', arguments: { tier: 'plus' } })) as {
      data: { tier: string; simulated: boolean }[];
    };
    assert.ok(engines.data.length > 0 && engines.data.every((e) => e.tier !== 'pro'));
    await owner.close();
  });

  it('shape 3: a tool that fails before it can answer says internal_error, with no internals', async () => {
    // A real failure: the API's database login may not read receipts (a misconfigured grant), which is no outage.
    const limited = await limitedDb('mcp_no_receipts', 'revoke select on receipts from ROLE');
    const api = await startApi('B', { db: limited });
    try {
      const client = await connect(api, org.ownerKey);
      const r = await client.callTool({ name: 'get_receipt', arguments: { request_id: 'req_0123456789abcdef01234567' } });
      assert.equal(r.isError, true);
      const e = json(r);
      assert.equal(e.error, 'internal_error');
      assert.equal(typeof e.detail, 'string');
      assert.doesNotMatch(String(e.detail), /permission|receipts|select/i);
      await client.close();
    } finally {
      await api.close();
      await limited.destroy();
    }
  });

  it('a batch with more than 8 self-answered calls is 413 batch_too_large and runs none of them', async () => {
    const batch = (n: number) =>
      Array.from({ length: n }, (_, i) => ({
        jsonrpc: '2.0',
        id: i + 1,
        method: 'tools/call',
        params: { name: 'list_engines', arguments: {} },
      }));
    const headers = { accept: 'application/json, text/event-stream' };
    const r = await call(apis.B, 'POST', '/mcp', { key: org.ownerKey, body: batch(9), headers });
    assert.equal(r.status, 413);
    assert.equal(r.body.error?.code, 'batch_too_large');
    // Forwarded tools do not count toward the limit.
    const mixed = [...batch(8), { jsonrpc: '2.0', id: 99, method: 'tools/call', params: { name: 'list_modes', arguments: {} } }];
    const ok = await fetch(`${apis.B.url}/mcp`, {
      method: 'POST',
      headers: { ...headers, authorization: `Bearer ${org.ownerKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(mixed),
    });
    await ok.text();
    assert.notEqual(ok.status, 413);
  });

  it("each call of a JSON-RPC batch counts toward the key's requests per minute; a refused batch takes no place", async () => {
    const key = await newKey(org.orgId, { limits: { requestsPerMinute: 5 } });
    const listModes = (n: number) =>
      Array.from({ length: n }, (_, i) => ({
        jsonrpc: '2.0',
        id: i + 1,
        method: 'tools/call',
        params: { name: 'list_modes', arguments: {} },
      }));
    // A successful POST answers as an event stream; a refused one as the JSON error.
    const post = async (body: unknown): Promise<{ status: number; text: string; retryAfter: string | null }> => {
      const res = await fetch(`${apis.B.url}/mcp`, {
        method: 'POST',
        headers: { accept: 'application/json, text/event-stream', authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, text: await res.text(), retryAfter: res.headers.get('retry-after') };
    };
    const codeOf = (text: string): unknown => (JSON.parse(text) as { error?: { code?: string } }).error?.code;
    // Six calls in one POST, against a limit of five a minute: refused whole.
    const tooMany = await post(listModes(6));
    assert.equal(tooMany.status, 429);
    assert.equal(codeOf(tooMany.text), 'rate_limit_exceeded');
    assert.match(tooMany.text, /6 calls; each counts, and the key allows 5 a minute/);
    // That refusal held one place (the POST itself); three calls then fit, and one more does not.
    const three = await post(listModes(3));
    assert.equal(three.status, 200, three.text);
    assert.equal((three.text.match(/"result"/g) ?? []).length, 3, 'each of the three calls answered');
    assert.equal((await post(listModes(1)[0])).status, 200);
    const refused = await post(listModes(1)[0]);
    assert.equal(refused.status, 429);
    assert.equal(codeOf(refused.text), 'rate_limit_exceeded');
    assert.ok(Number(refused.retryAfter) >= 1);
  });

  it('GET is 405, no key is 401, a browser Origin is 403: outside any tool result, as HTTP statuses', async () => {
    const get = await call(apis.B, 'GET', '/mcp', { key: org.ownerKey });
    assert.equal(get.status, 405);
    assert.equal(get.headers.get('allow'), 'POST');
    assert.equal((await call(apis.B, 'DELETE', '/mcp', { key: org.ownerKey })).status, 405);
    await assert.rejects(connect(apis.B), /401|invalid_api_key/);
    await assert.rejects(connect(apis.B, org.ownerKey, { origin: 'https://evil.example' }), /403|browser_origin_not_allowed/);
  });
});
