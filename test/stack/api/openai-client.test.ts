import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import OpenAI, { APIError } from 'openai';
import { stack } from '../../harness/stack';
import { startProductWorkers } from '../deliberation/helpers';
import { getBalance } from '../../../db/repositories/ledger';
import { call, FORMS, moneySnapshot, newOrg, PANEL, startApi, type Api } from './helpers';

type Svc = Record<string, unknown>;
type WithSvc = OpenAI.Chat.Completions.ChatCompletion & { svc: Svc };

/** Fields one Form names that must never leak into the other's `svc`. */
const ONLY: Readonly<Record<'A' | 'B', readonly string[]>> = {
  A: ['mode_key', 'mode_config_hash'],
  B: [
    'mode',
    'remaining_friction',
    'contested_passage',
    'best_seat_rationale',
    'best_seat_judged_by',
    'deliberation',
    'pricing_rule',
    'gateway_usd',
    'token_charge_usd',
    'platform_fee_usd',
    'cap_credit_usd',
    'billed_net',
    'substitutions',
  ],
};
const cents = (x: unknown): number => Math.round(Number(x) * 1_000_000);

describe('end to end through the official openai client', function () {
  this.timeout(180_000);
  let workers: { stop(): Promise<void> };
  const apis: Partial<Record<'A' | 'B', Api>> = {};

  before(async () => {
    // Sim engines with a fixed latency, so a duplicate can arrive while the first call runs.
    workers = await startProductWorkers({ QUORUM_SIM_LATENCY: 'fixed:400' });
    for (const form of FORMS) apis[form] = await startApi(form);
  });
  after(async () => {
    for (const api of Object.values(apis)) await api?.close();
    await workers.stop();
  });

  for (const form of FORMS) {
    describe(`Form ${form}`, () => {
      const client = (key: string): OpenAI =>
        new OpenAI({ baseURL: `${apis[form]?.url}/v1`, apiKey: key, maxRetries: 0, timeout: 120_000 });
      const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [
        { role: 'user', content: `Explain why the sky is blue, and compare Rayleigh with Mie scattering step by step. ${randomUUID()}` },
      ];

      it("a completion carries svc with this Form's fields only; a replay with the same Idempotency-Key is free and marked", async () => {
        const org = await newOrg();
        const openai = client(org.ownerKey);
        const idem = randomUUID();
        const res = (await openai.chat.completions.create(
          { model: PANEL[form], messages },
          { headers: { 'Idempotency-Key': idem } },
        )) as WithSvc;
        assert.equal(res.object, 'chat.completion');
        assert.equal(res.model, PANEL[form]);
        assert.ok(res.choices[0].message.content);
        assert.ok(['stop', 'length', ...(form === 'A' ? ['cost_cap'] : [])].includes(res.choices[0].finish_reason));
        const svc = res.svc;
        assert.match(String(svc.request_id), /^req_/);
        assert.equal(svc.replayed, undefined);
        assert.equal(svc.answer_truncated, undefined);
        for (const field of ONLY[form === 'A' ? 'B' : 'A']) assert.equal(field in svc, false, `${field} leaked into Form ${form}`);
        for (const field of ONLY[form]) assert.ok(field in svc, `${field} missing from Form ${form}`);
        if (form === 'B') {
          assert.equal(
            cents(svc.billed_usd),
            cents(svc.token_charge_usd) + cents(svc.platform_fee_usd) + cents(svc.surcharge_usd) - cents(svc.cap_credit_usd),
          );
          const net = svc.billed_net as Svc;
          assert.equal(cents(svc.billed_usd), cents(net.gateway_usd) + cents(net.platform_fee_usd) + cents(net.mode_fee_usd));
          assert.equal(
            typeof (res.usage as unknown as { completion_tokens_details: { reasoning_tokens: unknown } }).completion_tokens_details,
            'object',
          );
        }
        const paid = await getBalance(stack().db, org.orgId);

        const again = (await openai.chat.completions.create(
          { model: PANEL[form], messages },
          { headers: { 'Idempotency-Key': idem } },
        )) as WithSvc;
        assert.equal(again.choices[0].message.content, res.choices[0].message.content);
        assert.equal(again.choices[0].finish_reason, res.choices[0].finish_reason);
        assert.equal(again.svc.replayed, true);
        assert.equal(again.svc.request_id, svc.request_id);
        assert.equal(typeof again.svc.answer_truncated, 'boolean');
        assert.equal(again.svc.seats_answered, svc.seats_answered);
        if (form === 'B') {
          assert.deepEqual(Object.keys(again.svc).sort(), ['answer_truncated', 'mode', 'replayed', 'request_id', 'seats_answered']);
        }
        assert.deepEqual(await getBalance(stack().db, org.orgId), paid, 'a replay bills nothing');

        // The receipt of that call, with and without the transcript.
        const plain = await call(apis[form] as Api, 'GET', `/v1/receipts/${String(svc.request_id)}`, { key: org.ownerKey });
        assert.equal(plain.status, 200);
        const receipt = plain.body.receipt as Svc;
        assert.equal(plain.body.receipt_available, true);
        assert.equal(receipt.request_id, svc.request_id);
        assert.equal(cents(receipt.billed_usd), cents(svc.billed_usd));
        if (form === 'A') assert.equal(cents(receipt.token_charge_usd) + cents(receipt.q_surcharge_usd) >= cents(receipt.billed_usd), true);
        const seats = receipt.seats as Svc[];
        assert.ok(seats.length > 0 && seats.every((s) => !('content' in s)));
        assert.equal((form === 'B') === 'charges' in receipt, true);
        const full = await call(apis[form] as Api, 'GET', `/v1/receipts/${String(svc.request_id)}?include_transcript=true`, {
          key: org.ownerKey,
        });
        assert.ok(((full.body.receipt as Svc).seats as Svc[]).every((s) => typeof s.content === 'string'));
        // Another organisation cannot see it.
        const stranger = await newOrg();
        assert.equal(
          (await call(apis[form] as Api, 'GET', `/v1/receipts/${String(svc.request_id)}`, { key: stranger.ownerKey })).status,
          404,
        );
      });

      it("a concurrent duplicate gets 409 request_in_progress through the client's APIError", async () => {
        const org = await newOrg();
        const openai = client(org.ownerKey);
        const idem = randomUUID();
        const first = openai.chat.completions.create({ model: PANEL[form], messages }, { headers: { 'Idempotency-Key': idem } });
        await new Promise((r) => setTimeout(r, 300));
        const dup = await openai.chat.completions.create({ model: PANEL[form], messages }, { headers: { 'Idempotency-Key': idem } }).then(
          () => undefined,
          (err: unknown) => err,
        );
        assert.ok(dup instanceof APIError, String(dup));
        assert.equal(dup.status, 409);
        assert.equal(dup.code, 'request_in_progress');
        assert.equal(dup.type, 'invalid_request_error');
        // The 409 names the running call, so its receipt can be read once it ends.
        const raw = await call(apis[form] as Api, 'POST', '/v1/chat/completions', {
          key: org.ownerKey,
          body: { model: PANEL[form], messages },
          headers: { 'idempotency-key': idem },
        });
        assert.equal(raw.status, 409);
        const done = (await first) as WithSvc;
        assert.ok(done.choices[0].message.content);
        assert.equal(raw.body.svc?.request_id, done.svc.request_id);
      });

      it('without a header, an identical repeat is deduplicated by the derived key', async () => {
        const org = await newOrg();
        const openai = client(org.ownerKey);
        const one = (await openai.chat.completions.create({ model: PANEL[form], messages })) as WithSvc;
        const two = (await openai.chat.completions.create({ model: PANEL[form], messages })) as WithSvc;
        assert.equal(two.svc.replayed, true);
        assert.equal(two.svc.request_id, one.svc.request_id);
      });

      it(
        form === 'A'
          ? 'the same Idempotency-Key with another body is 422 idempotency_key_reused'
          : 'the same Idempotency-Key with another body replays the first answer (Form B matches on the key alone)',
        async () => {
          const org = await newOrg();
          const openai = client(org.ownerKey);
          const idem = randomUUID();
          const first = (await openai.chat.completions.create(
            { model: PANEL[form], messages },
            { headers: { 'Idempotency-Key': idem } },
          )) as WithSvc;
          const before = await moneySnapshot(org.orgId);
          const other: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [{ role: 'user', content: 'A different question entirely.' }];
          const again = openai.chat.completions.create({ model: PANEL[form], messages: other }, { headers: { 'Idempotency-Key': idem } });
          if (form === 'A') {
            const err = await again.then(
              () => undefined,
              (e: unknown) => e,
            );
            assert.ok(err instanceof APIError, String(err));
            assert.equal(err.status, 422);
            assert.equal(err.code, 'idempotency_key_reused');
          } else {
            const replay = (await again) as WithSvc;
            assert.equal(replay.svc.replayed, true);
            assert.equal(replay.svc.request_id, first.svc.request_id);
            assert.equal(replay.choices[0].message.content, first.choices[0].message.content);
          }
          assert.deepEqual(await moneySnapshot(org.orgId), before, 'neither answer bills again');
        },
      );

      if (form === 'B') {
        it("svc.max_cost_usd lowers the call's ceiling: the call runs in full, is capped and bills the lowered ceiling", async () => {
          const org = await newOrg();
          const openai = client(org.ownerKey);
          // Above the call's minimum (its seats reading the prompt), below what the panel spends.
          const body = { model: PANEL.B, messages, svc: { max_cost_usd: 0.001 } };
          const res = (await openai.chat.completions.create(
            body as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming,
          )) as WithSvc;
          assert.equal(res.svc.capped, true);
          assert.equal(cents(res.svc.billed_usd), 1_000);
          assert.ok(cents(res.svc.cap_credit_usd) > 0);
          assert.equal(res.choices[0].finish_reason, 'stop');
        });
      }

      it('error codes surface through the client: status, code, type', async () => {
        const org = await newOrg();
        const before = await moneySnapshot(org.orgId);
        const openai = client(org.ownerKey);
        const cases: [() => Promise<unknown>, number, string][] = [
          [() => openai.chat.completions.create({ model: 'no-such-mode', messages }), 404, 'model_not_found'],
          [() => openai.chat.completions.create({ model: PANEL[form], messages: [] }), 400, 'invalid_messages'],
          [() => client('qrm_live_nope').chat.completions.create({ model: PANEL[form], messages }), 401, 'invalid_api_key'],
          [() => openai.models.list(), 200, ''],
        ];
        for (const [promise, status, code] of cases) {
          const outcome = await promise().then(
            () => undefined,
            (err: unknown) => err,
          );
          if (status === 200) {
            assert.equal(outcome, undefined);
            continue;
          }
          assert.ok(outcome instanceof APIError, String(outcome));
          assert.equal(outcome.status, status);
          assert.equal(outcome.code, code);
        }
        assert.equal(await moneySnapshot(org.orgId), before);
      });
    });
  }
});
