import assert from 'node:assert/strict';
import { MIN_SAMPLE, tierRate } from '../../../domain/estimate';
import { customMode } from '../deliberation/helpers';
import { systemModeConfig } from './fixtures';
import { call, EXPRESS, FORMS, moneySnapshot, newKey, newOrg, PANEL, startApi, USER, type Api, type TestOrg } from './helpers';

type Obj = Record<string, unknown>;
const micros = (x: unknown): number => Math.round(Number(x) * 1_000_000);

for (const form of FORMS) {
  describe(`estimate, models, openapi: Form ${form}`, () => {
    let api: Api;
    let org: TestOrg;
    let key: string;
    before(async () => {
      api = await startApi(form);
      org = await newOrg();
      key = await newKey(org.orgId, { limits: { requestsPerMinute: 10_000 } });
    });
    after(() => api.close());

    it("estimate: the classifier's view and a quote, free, with this round trip's timing", async () => {
      const before = await moneySnapshot(org.orgId);
      const reply = await call(api, 'POST', '/v1/estimate', {
        key,
        body: { model: PANEL[form], messages: USER('Prove step by step that the sum of two even integers is even, and explain why.') },
      });
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      const b = reply.body as Obj;
      assert.match(String(b.request_id), /^est_/);
      assert.equal(b.model, PANEL[form]);
      assert.equal(b.billed_usd, 0);
      assert.ok(['light', 'medium', 'deep'].includes(String(b.depth)));
      assert.ok(Number(b.difficulty_score) >= 0 && Number(b.difficulty_score) <= 1);
      assert.equal(typeof b.task_type, 'string');
      const timing = b.timing_ms as Obj;
      assert.ok(Number.isInteger(timing.total) && Number.isInteger(timing.classify) && Number(timing.total) >= Number(timing.classify));
      if (form === 'A') {
        assert.equal(b.mode_key, 'quorum-panel');
        for (const f of ['mode', 'estimate', 'deliberation_value']) assert.equal(f in b, false, f);
        assert.ok(Number(b.estimated_price_usd) > 0);
      } else {
        assert.equal(b.mode, 'QRM:PANL');
        assert.equal('mode_key' in b, false);
        const e = b.estimate as Obj;
        assert.equal(e.rule, 'per_mtok');
        assert.equal(micros(e.gateway_usd) + micros(e.platform_fee_usd) + micros(e.mode_fee_usd), micros(e.gross_usd));
        assert.equal(micros(e.total_usd), micros(e.gross_usd) - micros(e.cap_credit_usd));
        assert.equal(micros(b.estimated_price_usd), micros(e.mode_fee_usd));
        assert.equal(e.tier, 'plus');
        assert.deepEqual(Object.keys(e.per_mtok_by_tier as Obj).sort(), ['experience', 'plus', 'pro']);
        // A mode with no recorded call (the system panel's count depends on what other suites called it with).
        const fresh = await customMode(org.orgId, 'quorum-panel', {});
        const unrecorded = await call(api, 'POST', '/v1/estimate', {
          key,
          body: { model: fresh.ticker, messages: USER('Why is the sky blue?') },
        });
        assert.equal(unrecorded.status, 200, JSON.stringify(unrecorded.body));
        const tiers = (unrecorded.body.estimate as Obj).per_mtok_by_tier as Record<string, Obj>;
        assert.equal(tiers.plus.reason, 'below_min_sample');
        assert.deepEqual([tiers.plus.input_usd_per_mtok, tiers.plus.output_usd_per_mtok, tiers.plus.n], [null, null, 0]);
        assert.equal(tiers.plus.basis, 'api_calls');
        assert.equal(((unrecorded.body.estimate as Obj).basis as Obj).kind, 'engine_rates');
        // The system panel's basis follows its own plus-tier rate, whichever other suites made it.
        const panelPlus = (e.per_mtok_by_tier as Record<string, Obj>).plus;
        assert.equal((e.basis as Obj).kind, panelPlus.reason ? 'engine_rates' : 'api_calls');
        const dv = b.deliberation_value as Obj;
        assert.ok(['likely_helps', 'likely_hurts', 'unknown'].includes(String(dv.verdict)));
      }
      assert.equal(await moneySnapshot(org.orgId), before, 'an estimate never touches the balance');
      // Its id is known to the receipts endpoint: no deliberation ran.
      const r = await call(api, 'GET', `/v1/receipts/${String(b.request_id)}`, { key });
      assert.equal(r.status, 200);
      assert.equal(r.body.receipt_available, false);
      assert.equal('receipt' in r.body, false);
      const stranger = await newOrg();
      assert.equal((await call(api, 'GET', `/v1/receipts/${String(b.request_id)}`, { key: stranger.ownerKey })).status, 404);
    });

    it("models: the entitled modes, in this Form's shape", async () => {
      const reply = await call(api, 'GET', '/v1/models', { key });
      assert.equal(reply.status, 200);
      assert.equal(reply.body.object, 'list');
      const data = reply.body.data as Obj[];
      const ids = data.map((m) => m.id);
      assert.ok(ids.includes(PANEL[form]) && ids.includes(EXPRESS[form]));
      for (const m of data) {
        assert.equal(m.object, 'model');
        // OpenAI's Model whole in both Forms (issue 53 item 5; test/stack/api/model-entries.test.ts reads it as typed clients do).
        assert.equal(m.owned_by, 'quorum');
        assert.ok(Number.isInteger(m.created));
        const svc = m.svc as Obj;
        const pricing = svc.pricing as Obj;
        if (form === 'A') {
          assert.equal(svc.mode_key, m.id);
          assert.ok(Array.isArray(svc.providers));
          assert.equal(typeof pricing.q_surcharge_usd, 'number');
          for (const f of ['use_when', 'provider_families', 'includes_deliberation']) assert.equal(f in svc, false, f);
        } else {
          assert.equal(typeof svc.use_when, 'string');
          assert.ok(Array.isArray(svc.provider_families));
          assert.equal(pricing.basis, 'per_mtok');
          assert.equal(pricing.covers, 'mode_fee');
          assert.equal(Number(pricing.per_call_cost_ceiling_usd) >= 2, true);
          const plus = (pricing.tiers as Record<string, Obj>).plus;
          if (plus.reason === 'below_min_sample') {
            assert.deepEqual([plus.input_usd_per_mtok, plus.n], [null, 0]);
            assert.match(String(pricing.rate_note), /Until 20 calls are recorded on a tier, its rate is the configured/);
          }
          for (const f of ['mode_key', 'providers', 'price_tier']) assert.equal(f in svc, false, f);
        }
      }
    });

    it('models: discloses the designed engines simulated engines answer for in development, and never in production', async () => {
      const listing = async (target: Api): Promise<Map<string, Obj>> => {
        const reply = await call(target, 'GET', '/v1/models', { key });
        return new Map((reply.body.data as Obj[]).map((m) => [String(m.id), m.svc as Obj]));
      };
      // No provider key is configured in the tests: every real engine of the panel is answered by a sim stand-in.
      const panel = (await listing(api)).get(PANEL[form])?.simulated_engines as { engines: string[]; note: string };
      assert.ok(panel.engines.includes('openai/gpt-4.1') && panel.engines.includes('anthropic/claude-sonnet-4'), JSON.stringify(panel));
      assert.ok(panel.engines.every((id) => !id.startsWith('sim/')));
      assert.match(panel.note, /simulated sim\/\* engines answer in their place/);
      const production = await startApi(form, { env: { QUORUM_ENV: 'production' } });
      try {
        for (const svc of (await listing(production)).values()) assert.equal('simulated_engines' in svc, false);
      } finally {
        await production.close();
      }
    });

    it('GET /openapi.json is OpenAPI 3.1 generated from the request schemas', async () => {
      const res = await fetch(`${api.url}/openapi.json`);
      const doc = (await res.json()) as {
        openapi: string;
        paths: Record<
          string,
          Record<string, { requestBody?: { content: Record<string, { schema: { properties: Obj; required: string[] } }> } }>
        >;
      };
      assert.equal(doc.openapi, '3.1.0');
      const schema = doc.paths['/v1/chat/completions'].post.requestBody?.content['application/json'].schema;
      assert.deepEqual(schema?.required, ['model', 'messages']);
      assert.equal('tier' in (schema?.properties ?? {}), form === 'B');
      assert.ok(doc.paths['/v1/receipts/{request_id}'].get);
    });
  });
}

describe('quote basis', () => {
  it('switches from the configured rate to recorded calls at MIN_SAMPLE', () => {
    const config = systemModeConfig();
    const few = tierRate(config, { n: MIN_SAMPLE - 1, inputTokens: 1000, outputTokens: 100, modeFeeMicros: 5000 });
    assert.equal(few.reason, 'below_min_sample');
    assert.equal(few.inputMicrosPerToken, config.fees.perMtokInputUsd);
    const enough = tierRate(config, { n: MIN_SAMPLE, inputTokens: 1000, outputTokens: 250, modeFeeMicros: 4000 });
    assert.equal(enough.reason, undefined);
    assert.equal(enough.inputMicrosPerToken, 2);
    assert.equal(enough.outputMicrosPerToken, 8);
  });
});
