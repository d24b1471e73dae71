import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { stack } from '../../harness/stack';
import { customMode, startProductWorkers } from '../deliberation/helpers';
import { Visitor } from '../console/helpers';
import { call, moneySnapshot, newKey, PANEL, startApi, USER, type Api } from './helpers';

/**
 * Issue 38 item 11, Form B ceilings (spec 01): any positive `svc.max_cost_usd` is a ceiling, converted exactly, and a
 * call over it runs in full and is credited back the excess (cap credit). What that costs the service is bounded per
 * organisation and UTC day: past QUORUM_CAP_CREDIT_DAILY_USD a call whose ceiling is below its quote is refused before
 * it runs, 402 `cap_credit_limit_reached`, naming the quote as the least ceiling accepted. The console shows the day's
 * cap credit and each receipt's.
 */

const micros = (usd: unknown): number => Math.round(Number(usd) * 1_000_000);
const usdText = (m: number): string => (m / 1_000_000).toFixed(6);
const PASSWORD = 'correct horse battery staple';

describe('Form B ceilings below the quote: cap credit, limited per day', function () {
  this.timeout(180_000);
  let workers: { stop(): Promise<void> };
  const apis: Api[] = [];

  before(async () => {
    workers = await startProductWorkers();
  });
  after(async () => {
    for (const api of apis) await api.close();
    await workers.stop();
  });

  const apiWith = async (env: NodeJS.ProcessEnv): Promise<Api> => {
    const api = await startApi('B', { env: { ...process.env, ...env } });
    apis.push(api);
    return api;
  };

  it('svc.max_cost_usd 2.01 holds exactly 2,010,000 µ$ (not 2,009,999)', async () => {
    const api = await apiWith({});
    const { db } = stack();
    const visitor = new Visitor(api);
    const org = `Ceiling ${randomUUID().slice(0, 8)}`;
    await visitor.signUp({ email: `c-${randomUUID().slice(0, 8)}@example.com`, password: PASSWORD, org });
    const { id: orgId } = (await db('organisations').where({ name: org }).first('id')) as { id: string };
    // The key's own ceiling is above 2.01, so the call's ceiling (and hold) is the value asked for.
    const key = await newKey(orgId, { limits: { maxCostMicros: 5_000_000n } });
    const body = { model: PANEL.B, messages: USER(`Name a prime number. ${randomUUID()}`), svc: { max_cost_usd: 2.01 } };
    const reply = await call(api, 'POST', '/v1/chat/completions', { key, body });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    const hold = (await db('reservations').where({ org_id: orgId, request_id: reply.body.svc?.request_id }).first('amount_micros')) as {
      amount_micros: bigint;
    };
    assert.equal(hold.amount_micros, 2_010_000n);
  });

  it('a ceiling a twentieth of the estimate is answered and charged the ceiling under the limit; past it 402 naming the least ceiling, nothing charged', async () => {
    const { db } = stack();
    const probe = await apiWith({});
    const visitor = new Visitor(probe);
    const org = `Cap credit ${randomUUID().slice(0, 8)}`;
    await visitor.signUp({ email: `cc-${randomUUID().slice(0, 8)}@example.com`, password: PASSWORD, org });
    const { id: orgId } = (await db('organisations').where({ name: org }).first('id')) as { id: string };
    const key = await newKey(orgId, { limits: { requestsPerMinute: 1_000 } });
    // The demo panel, but always two rounds and a synthesis, so what a call costs does not hang on the sim engines'
    // agreeing in round 1 (a converged call costs about a sixth of its estimate, a full one about half).
    const mode = await customMode(orgId, 'quorum-panel', { critique: 'always', express: 'never', skipSynthesisWhenConverged: false });
    const ask = (): { role: 'user'; content: string }[] =>
      USER(`Compare Rayleigh and Mie scattering step by step, with their trade-offs. ${randomUUID()}`);
    const estimateOf = async (messages: { role: 'user'; content: string }[]): Promise<number> => {
      const reply = await call(probe, 'POST', '/v1/estimate', { key, body: { model: mode.ticker, messages } });
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      return micros((reply.body.estimate as { gross_usd: number }).gross_usd);
    };

    // The estimate is the worst case (every output at its limit); the sim engines' full calls cost a quarter to a half of it
    // (one CI run: 24%), so a twentieth is a ceiling every call passes.
    const below = (estimate: number): number => Math.floor(estimate / 20);
    const first = ask();
    const gross1 = await estimateOf(first);
    const ceiling1 = below(gross1);
    // The limit is the credit the first call's quote projects (its quote less its ceiling): the first fits exactly.
    const limit = gross1 - ceiling1;
    const api = await apiWith({ QUORUM_CAP_CREDIT_DAILY_USD: usdText(limit) });
    const answered = await call(api, 'POST', '/v1/chat/completions', {
      key,
      body: { model: mode.ticker, messages: first, svc: { max_cost_usd: Number(usdText(ceiling1)) } },
    });
    assert.equal(answered.status, 200, JSON.stringify(answered.body));
    const svc = answered.body.svc as Record<string, unknown>;
    // Spec 01: billed = token charge + platform fee + surcharge − cap credit, and a capped call pays its ceiling.
    const gross = micros(svc.token_charge_usd) + micros(svc.platform_fee_usd) + micros(svc.surcharge_usd);
    assert.ok(gross > ceiling1, `the panel cost ${gross} µ$, not more than its ceiling ${ceiling1}: nothing to credit`);
    assert.deepEqual([svc.capped, micros(svc.billed_usd), micros(svc.cap_credit_usd)], [true, ceiling1, gross - ceiling1]);
    const received = gross - ceiling1;

    const second = ask();
    const gross2 = await estimateOf(second);
    const ceiling2 = below(gross2);
    // Admitted only while today's credit plus the credit this call's quote projects stays within the limit.
    assert.ok(received + (gross2 - ceiling2) > limit, 'the second call would pass the limit');
    const before = await moneySnapshot(orgId);
    const refused = await call(api, 'POST', '/v1/chat/completions', {
      key,
      body: { model: mode.ticker, messages: second, svc: { max_cost_usd: Number(usdText(ceiling2)) } },
    });
    assert.deepEqual(
      [refused.status, refused.body.error?.code, refused.body.error?.param],
      [402, 'cap_credit_limit_reached', 'svc.max_cost_usd'],
    );
    const least = Number(usdText(gross2));
    assert.match(refused.body.error?.message ?? '', new RegExp(`at least ${String(least).replace('.', '\\.')}\\b`));
    assert.match(refused.body.error?.message ?? '', /nothing was charged/);
    assert.equal(await moneySnapshot(orgId), before, 'nothing held, charged or credited');

    // A ceiling at the quote is accepted past the limit: it expects no credit.
    const atQuote = await call(api, 'POST', '/v1/chat/completions', {
      key,
      body: { model: mode.ticker, messages: second, svc: { max_cost_usd: least } },
    });
    assert.equal(atQuote.status, 200, JSON.stringify(atQuote.body));

    // The console shows the day's cap credit against the limit, and the capped call's credit on its receipt line.
    const overview = await visitor.get('/console/overview');
    const card = /id="cap-credit-today">\$([\d.]+)</.exec(overview.body);
    const credited = received + micros((atQuote.body.svc as Record<string, unknown>).cap_credit_usd);
    assert.equal(Number(card?.[1]), Number((credited / 1e6).toFixed(4)));
    const receipts = await visitor.get('/console/receipts');
    const line = new RegExp(`data-request-id="${String(svc.request_id)}">[\\s\\S]*?</tr>`).exec(receipts.body)?.[0] ?? '';
    assert.match(line, new RegExp(`−\\$${(received / 1e6).toFixed(4).replace('.', '\\.')}`));
  });
});
