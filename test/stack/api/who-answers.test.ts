import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { getBalance } from '../../../db/repositories/ledger';
import { OPENAI_TEST_KEY, openAiError, openAiReply, startOpenAiLoopback, type Loopback, type Reply } from '../../fixtures/providers';
import { stack } from '../../harness/stack';
import { chargeCount, customMode, startProductWorkers } from '../deliberation/helpers';
import { call, EXPRESS, FORMS, newOrg, PANEL, startApi, USER, type Api } from './helpers';
import { connect, json } from '../mcp/helpers';
import { Visitor } from '../console/helpers';

/**
 * Issue 27 items 5 and 6, through the whole stack with only the OpenAI family configured (a loopback provider): the
 * listings name the engine that really answers each seat, and a call no seat can answer ends 503 with a message a
 * caller can read (seats and short reasons, no address, key or provider text) and `Retry-After`.
 */

type Obj = Record<string, unknown>;
interface Place {
  designed: string;
  answers: string | null;
}
interface TierSeating {
  lane: string;
  seats: (Place & { role: string })[];
  judge: Place | null;
  synthesis: Place | null;
}

const KEYISH = 'sk-proj-LEAKEDleaked0123456789abcdef';
const INTERNAL_URL = 'http://inference-7.internal.example:8443/v1/pool?shard=3';
/** An upstream 500 that says far too much: an internal URL, a key-shaped string, a long trace. */
const UPSTREAM_BODY = `worker pool exhausted at ${INTERNAL_URL} using token ${KEYISH}; ${'at frame in module '.repeat(120)}`;
const PROMPT = 'Explain why the sky is blue and compare Rayleigh with Mie scattering, step by step.';

/** What a caller must never read in a 5xx message, and its other limits. */
function assertCallerSafe(message: string): void {
  assert.ok(message.length <= 300, `${message.length} characters: ${message}`);
  assert.doesNotMatch(message, /127\.0\.0\.1|localhost|:\d{2,5}\b|https?:\/\//, 'no address or port');
  assert.doesNotMatch(message, /sk-|LEAKED|\[redacted\]/, 'no key, not even a masked one');
  assert.doesNotMatch(message, /worker pool|frame|inference/, 'no upstream text');
  assert.equal(message.match(/openai\/gpt-4\.1\b/g)?.length ?? 0, 1, `the engine id once: ${message}`);
}

function retryAfter(headers: Headers): number {
  const value = headers.get('retry-after');
  assert.ok(value && /^\d+$/.test(value), `Retry-After in integer seconds, not ${value}`);
  return Number(value);
}

describe('who answers, and errors a caller can read: only the OpenAI family configured', function () {
  this.timeout(120_000);
  let behaviour: 'up' | 'error500' = 'up';
  let openai: Loopback;
  let workers: { stop(): Promise<void> };
  const apis = new Map<string, Api>();
  const logs: string[] = [];

  const script = (): Reply =>
    behaviour === 'up'
      ? openAiReply({ text: 'Shorter wavelengths scatter more (Rayleigh).', completionTokens: 9 })
      : openAiError(500, UPSTREAM_BODY);

  before(async () => {
    openai = await startOpenAiLoopback(script);
    const env = { QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY, QUORUM_OPENAI_BASE_URL: openai.baseUrl };
    workers = await startProductWorkers(env, undefined, (line) => logs.push(line));
    for (const form of FORMS) apis.set(form, await startApi(form, { env }));
  });
  after(async () => {
    for (const api of apis.values()) await api.close();
    await workers?.stop();
    await openai?.close();
  });

  for (const form of FORMS) {
    const api = (): Api => apis.get(form) as Api;
    const listing = async (key: string): Promise<Map<string, Obj>> => {
      const reply = await call(api(), 'GET', '/v1/models', { key });
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      return new Map((reply.body.data as Obj[]).map((m) => [String(m.id), m.svc as Obj]));
    };
    const families = (svc: Obj): unknown => (form === 'A' ? svc.providers : svc.provider_families);

    it(`Form ${form}: the listing names openai/gpt-4.1 for the Claude and Gemini seats, and the call's receipt says the same engine answered`, async () => {
      behaviour = 'up';
      const org = await newOrg();
      const panel = (await listing(org.ownerKey)).get(PANEL[form]) as Obj;
      const plus = (panel.seating as Record<string, TierSeating>).plus;
      assert.deepEqual(
        plus.seats.map((s) => [s.role, s.designed, s.answers]),
        [
          ['seat1', 'openai/gpt-4.1', 'openai/gpt-4.1'],
          ['seat2', 'anthropic/claude-sonnet-4', 'openai/gpt-4.1'],
          ['seat3', 'google/gemini-2.5-flash', 'openai/gpt-4.1'],
        ],
      );
      assert.deepEqual(plus.judge, { designed: 'anthropic/claude-sonnet-4', answers: 'openai/gpt-4.1' });
      assert.deepEqual(families(panel), ['openai'], 'only the family that receives the prompt');
      assert.equal('simulated_engines' in panel, false, 'no seat of it runs on sim here');

      const r = await call(api(), 'POST', '/v1/chat/completions', {
        key: org.ownerKey,
        body: { model: PANEL[form], messages: USER(PROMPT) },
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const requestId = String(r.body.svc?.request_id);
      const receipt = (await call(api(), 'GET', `/v1/receipts/${requestId}`, { key: org.ownerKey })).body.receipt as Obj;
      assert.equal(receipt.lane, 'panel');
      const answered = new Map((receipt.seats as Obj[]).map((row) => [String(row.role), row.model_used]));
      for (const seat of plus.seats) assert.equal(answered.get(seat.role), seat.answers, seat.role);
      assert.equal((receipt.staff as { judge: Obj | null }).judge?.model_used, plus.judge?.answers);
    });

    it(`Form ${form}: an express mode lists its one seat and no judge or synthesis`, async () => {
      const org = await newOrg();
      const express = (await listing(org.ownerKey)).get(EXPRESS[form]) as Obj;
      assert.deepEqual(express.seating, {
        experience: {
          lane: 'express',
          seats: [{ role: 'seat1', designed: 'openai/gpt-4.1-mini', answers: 'openai/gpt-4.1-mini' }],
          judge: null,
          synthesis: null,
          // Never certified; a certification's verdict would be shown on `plus` only (issue 38 item 5).
          certification: null,
        },
      });
      assert.deepEqual(families(express), ['openai']);
    });

    it(`Form ${form}: the provider answering 500 with a long body: 503 names the seats and a short reason, with Retry-After; the log has the detail`, async () => {
      behaviour = 'error500';
      const org = await newOrg();
      const before = await getBalance(stack().db, org.orgId);
      const seen = logs.length;
      const r = await call(api(), 'POST', '/v1/chat/completions', {
        key: org.ownerKey,
        body: { model: PANEL[form], messages: USER(PROMPT) },
      });
      assert.equal(r.status, 503, JSON.stringify(r.body));
      assert.equal(r.body.error?.code, 'mode_unavailable');
      const message = r.body.error?.message ?? '';
      assert.equal(message, 'No seat could answer; nothing was billed. seat1, seat2, seat3 — openai/gpt-4.1: provider error 500');
      assertCallerSafe(message);
      assert.equal(retryAfter(r.headers), 20);
      assert.equal((await getBalance(stack().db, org.orgId)).balanceMicros, before.balanceMicros);
      assert.equal(await chargeCount(org.orgId), 0);
      // Failed calls have no receipt (spec 01): the worker's log line carries what the provider said, keys masked.
      const failed = logs.slice(seen).filter((l) => l.includes('engine call failed'));
      assert.ok(failed.length >= 3, `${failed.length} failure lines`);
      assert.ok(failed.every((l) => l.includes('inference-7.internal.example') && l.includes('worker pool exhausted')));
      assert.ok(
        logs.every((l) => !l.includes(KEYISH)),
        'no key in any log line',
      );
    });
  }

  it('Form B, MCP: list_modes names the same answering engines as /v1/models; list_engines names the real backup that answers an engine with no key', async () => {
    const org = await newOrg();
    const client = await connect(apis.get('B') as Api, org.ownerKey);
    try {
      const modes = json(await client.callTool({ name: 'list_modes', arguments: {} })) as { data: { id: string; svc: Obj }[] };
      const rest = (await call(apis.get('B') as Api, 'GET', '/v1/models', { key: org.ownerKey })).body.data as { id: string; svc: Obj }[];
      const seating = (list: { id: string; svc: Obj }[]): unknown => list.find((m) => m.id === PANEL.B)?.svc.seating;
      assert.deepEqual(seating(modes.data), seating(rest));
      const engines = json(await client.callTool({ name: 'list_engines', arguments: { tier: 'plus' } })) as {
        data: { id: string; available: string; answers: string | null }[];
      };
      const byId = new Map(engines.data.map((e) => [e.id, [e.available, e.answers]]));
      assert.deepEqual(byId.get('openai/gpt-4.1'), ['yes', 'openai/gpt-4.1']);
      assert.deepEqual(byId.get('anthropic/claude-sonnet-4'), ['stand_in', 'openai/gpt-4.1']);
      assert.deepEqual(byId.get('google/gemini-2.5-flash'), ['stand_in', 'openai/gpt-4.1']);
    } finally {
      await client.close();
    }
  });

  it("the console's mode builder labels an engine with no key by the engine that answers it here (its real backup)", async () => {
    const v = new Visitor(apis.get('B') as Api);
    await v.signUp({ email: `w-${randomUUID().slice(0, 8)}@example.com`, password: 'correct horse battery staple', org: 'Who answers' });
    const editor = await v.get('/console/modes/new');
    assert.equal(editor.status, 200);
    assert.ok(editor.body.includes('anthropic/claude-sonnet-4 (anthropic, answered by openai/gpt-4.1 here)'));
    assert.ok(editor.body.includes('openai/gpt-4.1 (openai)'));
    assert.doesNotMatch(editor.body, /claude-sonnet-4 \(anthropic, simulated stand-in here\)/);
  });

  it("Form B: a seat that could not answer is on the receipt's seats_unavailable with the detail sanitised: what the provider said, no address, no key", async () => {
    behaviour = 'error500';
    const org = await newOrg();
    // seat1 on the failing provider (no backup can run here), seat2 on sim: the call answers with one seat missing.
    const mode = await customMode(org.orgId, 'quorum-panel', {
      tiers: { experience: { seats: ['sim/alpha-experience'] }, plus: { seats: ['openai/gpt-4.1', 'sim/beta-plus'] } },
      staff: { judge: { engine: 'sim/gamma-plus' }, synthesis: { engine: 'sim/alpha-plus' } },
      express: 'never',
    });
    const api = apis.get('B') as Api;
    const r = await call(api, 'POST', '/v1/chat/completions', { key: org.ownerKey, body: { model: mode.ticker, messages: USER(PROMPT) } });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const receipt = (await call(api, 'GET', `/v1/receipts/${String(r.body.svc?.request_id)}`, { key: org.ownerKey })).body.receipt as Obj;
    const [unavailable, ...more] = receipt.seats_unavailable as { role: string; reason: string }[];
    assert.deepEqual(more, []);
    assert.equal(unavailable.role, 'seat1');
    assert.match(
      unavailable.reason,
      /^openai\/gpt-4\.1: provider error 500 — provider said: worker pool exhausted at \[address\] using token \[redacted\]/,
    );
    assert.doesNotMatch(unavailable.reason, /internal\.example|8443|LEAKED/);
    assert.ok(unavailable.reason.length < 250, unavailable.reason);
  });
});

describe('errors a caller can read: the OpenAI provider unreachable (connection refused)', function () {
  this.timeout(120_000);
  let workers: { stop(): Promise<void> };
  const apis = new Map<string, Api>();
  const logs: string[] = [];

  before(async () => {
    // A loopback's port, closed: every request to it is refused.
    const gone = await startOpenAiLoopback(openAiReply({}));
    await gone.close();
    const env = { QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY, QUORUM_OPENAI_BASE_URL: gone.baseUrl };
    workers = await startProductWorkers(env, undefined, (line) => logs.push(line));
    for (const form of FORMS) apis.set(form, await startApi(form, { env }));
  });
  after(async () => {
    for (const api of apis.values()) await api.close();
    await workers?.stop();
  });

  for (const form of FORMS) {
    it(`Form ${form}: 503 mode_unavailable names the seats and "provider unreachable", no address or port, with Retry-After`, async () => {
      const org = await newOrg();
      const seen = logs.length;
      const r = await call(apis.get(form) as Api, 'POST', '/v1/chat/completions', {
        key: org.ownerKey,
        body: { model: PANEL[form], messages: USER(PROMPT) },
      });
      assert.equal(r.status, 503, JSON.stringify(r.body));
      assert.equal(r.body.error?.code, 'mode_unavailable');
      const message = r.body.error?.message ?? '';
      assert.equal(
        message,
        'No seat could answer; nothing was billed. seat1, seat2, seat3 — openai/gpt-4.1: provider unreachable (ECONNREFUSED)',
      );
      assertCallerSafe(message);
      assert.equal(retryAfter(r.headers), 20);
      assert.equal(await chargeCount(org.orgId), 0);
      // The log keeps the socket error with its address, for whoever runs the service.
      assert.ok(logs.slice(seen).some((l) => l.includes('engine call failed') && /ECONNREFUSED[^"]*127\.0\.0\.1:\d+/.test(l)));
    });
  }
});
