import assert from 'node:assert/strict';
import { testSecretBox } from '../../harness/settings';
import { setProviderKey } from '../../../db/repositories/provider-credentials';
import { JUDGE_TAG, SYNTHESIS_TAG } from '../../../domain/prompts';
import {
  OPENAI_TEST_KEY,
  openAiReply,
  startOpenAiLoopback,
  type Loopback,
  type RecordedRequest,
  type Reply,
} from '../../fixtures/providers';
import { getBalance } from '../../../db/repositories/ledger';
import { call, newOrg, startApi, type Api } from '../api/helpers';
import { workflowIds } from '../../../domain/workflow-ids';
import { customMode, recordHistory, startProductWorkers } from './helpers';
import { stack } from '../../harness/stack';

/**
 * Own provider keys (issue 26 item 1; spec 01 items 11 and 13): a seat on the organisation's own key runs on and is
 * billed by its provider, so the prepaid balance pays only the 0.5% platform fee on it; judge and synthesis run on the
 * service's keys at provider price + 5%; the mode's fee is charged on every token processed. Each figure below is
 * computed here from the provider's own record of what it served, at the published prices, not read from the code.
 */
const OWN_KEY = 'sk-own-openai-key-of-the-organisation-00000001';
/** Published prices, USD per million tokens (= micro-dollars per token). */
const PRICES: Record<string, { input: number; output: number }> = {
  'gpt-4.1': { input: 2, output: 8 },
  'gpt-4.1-mini': { input: 0.4, output: 1.6 },
};
const MODE_FEE = { input: 0.5, output: 2 }; // the panel's Form B rate: $0.5 per Mtok in, output at 4x

/** Token counts chosen per kind of call, so every cost is a whole number of micro-dollars. */
function usageOf(req: RecordedRequest): { prompt: number; completion: number } {
  if (req.bodyText.includes(JUDGE_TAG)) return { prompt: 300, completion: 40 };
  if (req.bodyText.includes(SYNTHESIS_TAG)) return { prompt: 400, completion: 90 };
  return { prompt: 120, completion: 60 };
}

function script(req: RecordedRequest): Reply {
  const { prompt, completion } = usageOf(req);
  if (req.bodyText.includes(JUDGE_TAG)) {
    const labels = [...new Set([...req.bodyText.matchAll(/Answer ([A-C]):/g)].map((m) => m[1]))];
    const verdict = {
      scores: Object.fromEntries(labels.map((l, i) => [l, 9 - i])),
      best: labels[0],
      why: 'Complete.',
      divergence: 0.2,
      converged: true,
    };
    return openAiReply({ text: JSON.stringify(verdict), promptTokens: prompt, completionTokens: completion });
  }
  return openAiReply({ text: 'Rayleigh scattering favours short wavelengths.', promptTokens: prompt, completionTokens: completion });
}

/** One round of two OpenAI seats, judge and synthesis on gpt-4.1, synthesis always run: every call on one loopback. */
function openAiPanel(orgId: string): ReturnType<typeof customMode> {
  return customMode(orgId, 'quorum-panel', {
    tiers: { experience: { seats: ['openai/gpt-4.1-mini'] }, plus: { seats: ['openai/gpt-4.1', 'openai/gpt-4.1-mini'] } },
    staff: { judge: { engine: 'openai/gpt-4.1' }, synthesis: { engine: 'openai/gpt-4.1' } },
    rounds: 1,
    critique: 'never',
    express: 'never',
    skipSynthesisWhenConverged: false,
  });
}

describe('own provider keys: seats on the caller own key are billed by its provider, not twice', function () {
  this.timeout(120_000);
  let openai: Loopback;
  let workers: { stop(): Promise<void> };
  let api: Api;

  before(async () => {
    openai = await startOpenAiLoopback(script, { apiKeys: [OPENAI_TEST_KEY, OWN_KEY] });
    workers = await startProductWorkers({ QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY, QUORUM_OPENAI_BASE_URL: openai.baseUrl });
    api = await startApi('B');
  });
  after(async () => {
    await api.close();
    await workers.stop();
    await openai.close();
  });

  it('Form B: the bill is the service calls at cost + 5%, 0.5% of the own-key seats, and the mode fee; the receipt explains it', async () => {
    const org = await newOrg(10);
    await setProviderKey(stack().db, testSecretBox(), { orgId: org.orgId, family: 'openai', apiKey: OWN_KEY });
    const mode = await openAiPanel(org.orgId);
    const before = (await getBalance(stack().db, org.orgId)).balanceMicros;
    const seen = openai.requests.length;
    const idempotencyKey = `own-keys-${org.orgId}`;
    const r = await call(api, 'POST', '/v1/chat/completions', {
      key: org.ownerKey,
      body: { model: mode.ticker, messages: [{ role: 'user', content: 'Why is the sky blue? Explain step by step.' }] },
      headers: { 'Idempotency-Key': idempotencyKey },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    // A history with the own-key billing patch marker, for the replay guard.
    await recordHistory('own-key-panel', workflowIds.deliberation(org.orgId, idempotencyKey));

    // What the provider served, by key: the two seats on the organisation's key, judge and synthesis on ours.
    const served = openai.requests.slice(seen).map((req) => {
      const { prompt, completion } = usageOf(req);
      const price = PRICES[(req.body as { model: string }).model];
      assert.ok(price, `a price for ${JSON.stringify(req.body)}`);
      return {
        own: req.headers.authorization === `Bearer ${OWN_KEY}`,
        prompt,
        completion,
        cost: prompt * price.input + completion * price.output,
      };
    });
    assert.deepEqual(
      served.map((s) => s.own).sort(),
      [false, false, true, true],
      'two own-key seats, judge and synthesis on the service key',
    );
    const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
    const ownCost = sum(served.filter((s) => s.own).map((s) => s.cost)); // 120×2 + 60×8 + 120×0.4 + 60×1.6 = 864
    const serviceCost = sum(served.filter((s) => !s.own).map((s) => s.cost)); // 300×2 + 40×8 + 400×2 + 90×8 = 2,440
    const platformFee = Math.round(serviceCost / 20) + Math.round(ownCost / 200); // 122 + 4
    const modeFee = sum(served.map((s) => s.prompt * MODE_FEE.input + s.completion * MODE_FEE.output));
    const billed = serviceCost + platformFee + modeFee;

    const receipt = await call(api, 'GET', `/v1/receipts/${String((r.body.svc as { request_id: string }).request_id)}`, {
      key: org.ownerKey,
    });
    assert.equal(receipt.status, 200);
    const b = (receipt.body as unknown as { receipt: unknown }).receipt as {
      payer: string;
      billed_usd: number;
      charges: { gateway_usd: number; platform_fee_usd: number; mode_fee_usd: number };
      seats: { source: string; real_cost_usd: number; fee_rate: number; fee_usd: number }[];
    };
    const usd = (micros: number): number => micros / 1_000_000;
    assert.equal(b.payer, 'own_keys');
    assert.equal(b.charges.gateway_usd, usd(serviceCost), 'the engines we bill for are our own keys only');
    assert.equal(b.charges.platform_fee_usd, usd(platformFee));
    assert.equal(b.charges.mode_fee_usd, usd(modeFee));
    assert.equal(b.billed_usd, usd(billed));
    for (const seat of b.seats) {
      assert.equal(seat.source, 'own_key');
      assert.equal(seat.fee_rate, 0.005);
      assert.equal(seat.fee_usd, usd(Math.round(Math.round(seat.real_cost_usd * 1_000_000) / 200)));
    }
    assert.equal(
      usd(sum(b.seats.map((s) => Math.round(s.real_cost_usd * 1_000_000)))),
      usd(ownCost),
      'the seat rows are the own-key calls at cost',
    );
    // The balance moved by exactly the bill: the own-key seats' $0.000864 is on the organisation's OpenAI invoice.
    assert.equal(before - (await getBalance(stack().db, org.orgId)).balanceMicros, BigInt(billed));
  });

  it('the estimate prices the own-key seats the same way: no engine cost for them, their 0.5% fee', async () => {
    const org = await newOrg(10);
    const mode = await openAiPanel(org.orgId);
    const body = { model: mode.ticker, messages: [{ role: 'user', content: 'Why is the sky blue? Explain step by step.' }] };
    const quoteOf = async (): Promise<{ gateway_usd: number; platform_fee_usd: number; mode_fee_usd: number }> => {
      const e = await call(api, 'POST', '/v1/estimate', { key: org.ownerKey, body });
      assert.equal(e.status, 200, JSON.stringify(e.body));
      return (e.body as { estimate: { gateway_usd: number; platform_fee_usd: number; mode_fee_usd: number } }).estimate;
    };
    const service = await quoteOf();
    await setProviderKey(stack().db, testSecretBox(), { orgId: org.orgId, family: 'openai', apiKey: OWN_KEY });
    const own = await quoteOf();
    // Same calls, same tokens: the mode's fee is unchanged; the seats' cost leaves the engines' part of the bill.
    assert.equal(own.mode_fee_usd, service.mode_fee_usd);
    assert.ok(own.gateway_usd < service.gateway_usd, `${own.gateway_usd} < ${service.gateway_usd}`);
    const seatsMicros = Math.round((service.gateway_usd - own.gateway_usd) * 1_000_000);
    const expectedFee = Math.round(Math.round(own.gateway_usd * 1_000_000) / 20) + Math.round(seatsMicros / 200);
    assert.equal(Math.round(own.platform_fee_usd * 1_000_000), expectedFee);
  });
});
