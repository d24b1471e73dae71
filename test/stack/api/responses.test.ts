import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import OpenAI, { APIError } from 'openai';
import { z } from 'zod';
import { getBalance, listLedger } from '../../../db/repositories/ledger';
import { JUDGE_TAG } from '../../../domain/prompts';
import { OPENAI_TEST_KEY, startOpenAiLoopback, type Loopback, type RecordedRequest } from '../../fixtures/providers';
import { until } from '../../harness/faults';
import { stack } from '../../harness/stack';
import { workflowIds } from '../../../domain/workflow-ids';
import { assertEachBilledOnce, customMode, recordHistory, startProductWorkers } from '../deliberation/helpers';
import { call, EXPRESS, FORMS, newOrg, startApi, type Api } from './helpers';
import { isStaff, modelOf, script, servedBill, SLOW_CRITIQUE, SLOW_SEAT_MS, slowSeatPanel } from './slow-seat';

/**
 * `POST /v1/responses` and its poll, cancel and delete (issue 40 items 1 and 3) through the official `openai` client,
 * in both Forms: a background response answers at once and polls to the answer a chat completion of the same mode
 * gives, billed once; a cancel stops the engine calls in flight and bills what the provider served, computed here from
 * the loopback's own record at the published prices.
 */
type Svc = Record<string, unknown>;
type WithSvc<T> = T & { svc: Svc };
const micros = (usd: unknown): number => Math.round(Number(usd) * 1_000_000);

function client(api: Api | undefined, key: string): OpenAI {
  return new OpenAI({ baseURL: `${api?.url}/v1`, apiKey: key, maxRetries: 0, timeout: 120_000 });
}

async function rejection(p: Promise<unknown>): Promise<APIError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(err instanceof APIError, String(err));
  return err;
}

/** Polls a response until it leaves queued / in_progress. */
async function settled(openai: OpenAI, id: string): Promise<WithSvc<OpenAI.Responses.Response>> {
  for (const deadline = Date.now() + 90_000; Date.now() < deadline;) {
    const r = (await openai.responses.retrieve(id)) as WithSvc<OpenAI.Responses.Response>;
    if (r.status !== 'queued' && r.status !== 'in_progress') return r;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`response ${id} still running`);
}

/** The svc fields a call's identity and timing give it; the rest must be the same for the same question. */
function sameAnswerFields(svc: Svc): Svc {
  return Object.fromEntries(Object.entries(svc).filter(([k]) => k !== 'request_id' && k !== 'latency_ms'));
}

describe('responses through the official openai client (sim engines)', function () {
  this.timeout(180_000);
  let workers: { stop(): Promise<void> };
  const apis: Partial<Record<'A' | 'B', Api>> = {};

  before(async () => {
    // Engines take 1.5 s, so a background response is still running when its create answers.
    workers = await startProductWorkers({ QUORUM_SIM_LATENCY: 'fixed:1500' });
    for (const form of FORMS) apis[form] = await startApi(form);
  });
  after(async () => {
    for (const api of Object.values(apis)) await api?.close();
    await workers.stop();
  });

  for (const form of FORMS) {
    describe(`Form ${form}`, () => {
      const input = `Why is the sky blue? Compare Rayleigh with Mie scattering. ${randomUUID()}`;

      it('background: answers at once, polls to completed with the answer and svc of a chat completion of the same mode, billed once', async () => {
        const org = await newOrg();
        const openai = client(apis[form], org.ownerKey);
        const t0 = Date.now();
        const created = (await openai.responses.create({
          model: EXPRESS[form],
          input,
          background: true,
          metadata: { ticket: 'T-1' },
        })) as WithSvc<OpenAI.Responses.Response>;
        // The sim seat alone takes 1.5 s: an answer in less is the create answering before the deliberation ends.
        assert.ok(Date.now() - t0 < 1_500, `create took ${Date.now() - t0} ms`);
        assert.equal(created.object, 'response');
        assert.ok(created.status === 'queued' || created.status === 'in_progress', String(created.status));
        assert.match(created.id, /^resp_/);
        assert.equal(created.background, true);

        const done = await settled(openai, created.id);
        assert.equal(done.status, 'completed');
        assert.equal(done.id, created.id);
        assert.deepEqual(done.metadata, { ticket: 'T-1' });
        // Named from the start by the request that answers it (its receipt's id).
        assert.match(String(created.svc.request_id), /^req_/);
        assert.equal(done.svc.request_id, created.svc.request_id);
        assert.ok(done.output_text.length > 0);

        const chat = (await openai.chat.completions.create({
          model: EXPRESS[form],
          messages: [{ role: 'user', content: input }],
        })) as WithSvc<OpenAI.Chat.Completions.ChatCompletion>;
        // The chat completion is a call of its own (its own key): the same seat answers the same question alike.
        assert.notEqual(chat.svc.request_id, done.svc.request_id);
        assert.equal(done.output_text, chat.choices[0].message.content);
        assert.deepEqual(sameAnswerFields(done.svc), sameAnswerFields(chat.svc));
        assert.equal(done.usage?.input_tokens, chat.usage?.prompt_tokens);
        assert.equal(done.usage?.output_tokens, chat.usage?.completion_tokens);

        // A poll again bills nothing more: one charge for each call, each its svc's billed_usd.
        await openai.responses.retrieve(created.id);
        await assertEachBilledOnce(org.orgId, [String(done.svc.request_id), String(chat.svc.request_id)]);
        const charges = (await listLedger(stack().db, org.orgId, 100)).filter((e) => e.kind === 'charge');
        const charged = charges.find((e) => e.requestId === done.svc.request_id);
        assert.equal(-Number(charged?.amountMicros), micros(done.svc.billed_usd));
      });

      it('without background: answers when the deliberation ends; the same Idempotency-Key replays it without billing', async () => {
        const org = await newOrg();
        const openai = client(apis[form], org.ownerKey);
        const key = randomUUID();
        const r = (await openai.responses.create(
          { model: EXPRESS[form], input: [{ role: 'user', content: input }], instructions: 'Answer briefly.' },
          { headers: { 'Idempotency-Key': key } },
        )) as WithSvc<OpenAI.Responses.Response>;
        assert.equal(r.status, 'completed');
        assert.equal(r.instructions, 'Answer briefly.');
        assert.ok(r.output_text.length > 0);
        const paid = await getBalance(stack().db, org.orgId);
        const again = (await openai.responses.create(
          { model: EXPRESS[form], input: [{ role: 'user', content: input }], instructions: 'Answer briefly.' },
          { headers: { 'Idempotency-Key': key } },
        )) as WithSvc<OpenAI.Responses.Response>;
        assert.equal(again.id, r.id);
        assert.equal(again.output_text, r.output_text);
        assert.equal(again.svc.replayed, true);
        assert.deepEqual(await getBalance(stack().db, org.orgId), paid);
      });

      it('without an Idempotency-Key every create is a new response, each billed, as on OpenAI (issue 53)', async () => {
        const org = await newOrg();
        const openai = client(apis[form], org.ownerKey);
        const body = { model: EXPRESS[form], input: `Name a prime number. ${randomUUID()}` };
        const [a, b] = (await Promise.all([
          openai.responses.create(body),
          openai.responses.create(body),
        ])) as WithSvc<OpenAI.Responses.Response>[];
        assert.notEqual(a.id, b.id);
        assert.notEqual(a.svc.request_id, b.svc.request_id);
        // Spec 01: `replayed` is present (and true) only on a replay.
        assert.equal(a.svc.replayed, undefined);
        assert.equal(b.svc.replayed, undefined);
        await assertEachBilledOnce(org.orgId, [String(a.svc.request_id), String(b.svc.request_id)]);
        // Each is its own response to poll.
        assert.equal((await openai.responses.retrieve(a.id)).id, a.id);
        assert.equal((await openai.responses.retrieve(b.id)).id, b.id);
      });

      it('echoes the settings it honoured (temperature, top_p, max_output_tokens, text.format) on the create and on a poll (issue 53)', async () => {
        const org = await newOrg();
        const openai = client(apis[form], org.ownerKey);
        const schema = { type: 'object', properties: { prime: { type: 'integer' } }, required: ['prime'], additionalProperties: false };
        const sent = {
          temperature: 0.3,
          top_p: 0.9,
          max_output_tokens: 300,
          text: { format: { type: 'json_schema' as const, name: 'prime', schema, strict: true } },
        };
        const created = await openai.responses.create({ model: EXPRESS[form], input: `Name a prime number. ${randomUUID()}`, ...sent });
        const polled = await openai.responses.retrieve(created.id);
        for (const r of [created, polled]) {
          assert.deepEqual([r.temperature, r.top_p, r.max_output_tokens], [0.3, 0.9, 300]);
          assert.deepEqual(r.text?.format, sent.text.format);
        }
        const plain = await openai.responses.create({ model: EXPRESS[form], input: `Name a prime number. ${randomUUID()}` });
        assert.deepEqual(
          [plain.temperature, plain.top_p, plain.max_output_tokens, plain.text?.format],
          [null, null, null, { type: 'text' }],
        );
      });

      it('previous_response_id continues a response: its turn and answer run before the new input, listed by input_items (issue 53)', async () => {
        const org = await newOrg();
        const openai = client(apis[form], org.ownerKey);
        const first = await openai.responses.create({
          model: EXPRESS[form],
          input: `My name is Ada. ${randomUUID()}`,
          instructions: 'Be brief.',
        });
        const second = await openai.responses.create({ model: EXPRESS[form], input: 'What is my name?', previous_response_id: first.id });
        assert.equal(second.status, 'completed');
        assert.equal(second.previous_response_id, first.id);
        assert.equal(second.instructions, null, 'instructions are not carried over');
        // What the deliberation was asked: its workflow's input, read from Temporal's own history.
        const key = Buffer.from(second.id.slice('resp_'.length), 'base64url').toString('utf8');
        const history = await stack().env.client.workflow.getHandle(workflowIds.deliberation(org.orgId, key)).fetchHistory();
        const payload = history.events?.[0].workflowExecutionStartedEventAttributes?.input?.payloads?.[0].data;
        const asked = (
          JSON.parse(Buffer.from(payload ?? new Uint8Array()).toString('utf8')) as { messages: { role: string; content: string }[] }
        ).messages;
        const firstInput = (await openai.responses.inputItems.list(first.id)).data;
        assert.equal(firstInput.length, 1);
        const firstText = (firstInput[0] as { content: { text: string }[] }).content[0].text;
        assert.match(firstText, /^My name is Ada\./);
        assert.deepEqual(asked, [
          { role: 'user', content: firstText },
          { role: 'assistant', content: first.output_text },
          { role: 'user', content: 'What is my name?' },
        ]);
        // input_items: newest first by default, as OpenAI lists them; `order=asc`, `limit` and `after` page through.
        const items = (await openai.responses.inputItems.list(second.id)).data as {
          id: string;
          role: string;
          content: { type: string; text: string }[];
        }[];
        assert.deepEqual(
          items.map((i) => [i.role, i.content[0].type, i.content[0].text]),
          [
            ['user', 'input_text', 'What is my name?'],
            ['assistant', 'output_text', first.output_text],
            ['user', 'input_text', firstText],
          ],
        );
        const pageOne = await openai.responses.inputItems.list(second.id, { order: 'asc', limit: 2 });
        assert.deepEqual(
          pageOne.data.map((i) => i.id),
          [items[2].id, items[1].id],
        );
        assert.equal(pageOne.has_more, true);
        const pageTwo = await openai.responses.inputItems.list(second.id, { order: 'asc', limit: 2, after: items[1].id });
        assert.deepEqual(
          pageTwo.data.map((i) => i.id),
          [items[0].id],
        );
        // Another organisation's response cannot be continued; a deleted one's texts are gone.
        const other = await newOrg();
        const foreign = await rejection(
          client(apis[form], other.ownerKey).responses.create({ model: EXPRESS[form], input: 'Hi', previous_response_id: first.id }),
        );
        assert.deepEqual([foreign.status, foreign.code, foreign.param], [404, 'response_not_found', 'previous_response_id']);
        await openai.responses.delete(first.id);
        const gone = await rejection(openai.responses.create({ model: EXPRESS[form], input: 'Hi', previous_response_id: first.id }));
        assert.deepEqual([gone.status, gone.param], [404, 'previous_response_id']);
      });

      it("cancel of a finished response returns it unchanged; DELETE removes its answer; another organisation's id is 404", async () => {
        const org = await newOrg();
        const openai = client(apis[form], org.ownerKey);
        const r = (await openai.responses.create({ model: EXPRESS[form], input })) as WithSvc<OpenAI.Responses.Response>;
        const paid = await getBalance(stack().db, org.orgId);
        const cancelled = (await openai.responses.cancel(r.id)) as WithSvc<OpenAI.Responses.Response>;
        assert.equal(cancelled.status, 'completed');
        assert.deepEqual(cancelled.output, r.output);
        assert.deepEqual(await getBalance(stack().db, org.orgId), paid);

        const stranger = client(apis[form], (await newOrg()).ownerKey);
        for (const attempt of [
          () => stranger.responses.retrieve(r.id),
          () => stranger.responses.cancel(r.id),
          () => stranger.responses.delete(r.id),
        ]) {
          const err = await rejection(attempt());
          assert.equal(err.status, 404);
          assert.equal(err.code, 'response_not_found');
        }
        assert.equal((await openai.responses.retrieve(r.id)).status, 'completed');

        await openai.responses.delete(r.id);
        assert.equal((await rejection(openai.responses.retrieve(r.id))).status, 404);
        // The receipt keeps the figures, not the texts.
        const receipt = await call(apis[form] as Api, 'GET', `/v1/receipts/${String(r.svc.request_id)}?include_transcript=true`, {
          key: org.ownerKey,
        });
        const body = receipt.body.receipt as { billed_usd: number; seats: { content: string }[] };
        assert.equal(micros(body.billed_usd), micros(r.svc.billed_usd));
        assert.ok(body.seats.length > 0 && body.seats.every((s) => s.content === ''));
        assert.deepEqual(await getBalance(stack().db, org.orgId), paid);
      });

      it('refuses what it does not honour, by name: unknown keys, tools, text.verbosity, a stream not stored; text.format and max_output_tokens are honoured', async () => {
        const org = await newOrg();
        const openai = client(apis[form], org.ownerKey);
        const cases: [Record<string, unknown>, string, string][] = [
          [{ bogus_parameter: 1 }, 'unknown_parameter', 'bogus_parameter'],
          [{ stream: 'yes' }, 'invalid_request', 'stream'],
          [{ stream: true, store: false }, 'invalid_request', 'store'],
          [{ tools: [{ type: 'web_search' }] }, 'unsupported_parameter', 'tools'],
          [{ conversation: 'conv_x' }, 'unsupported_parameter', 'conversation'],
          [{ text: { verbosity: 'low' } }, 'unsupported_parameter', 'text.verbosity'],
          [{ max_output_tokens: 0 }, 'invalid_request', 'max_output_tokens'],
          [{ background: true, store: false }, 'invalid_request', 'store'],
        ];
        for (const [extra, code, param] of cases) {
          const body = { model: EXPRESS[form], input, ...extra };
          const err = await rejection(openai.responses.create(body as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming));
          assert.deepEqual([err.status, err.code, err.param], [400, code, param], JSON.stringify(extra));
        }
        // text.format is chat completions' response_format: the answer parses and has what the schema requires.
        const schema = { type: 'object', properties: { colour: { type: 'string' } }, required: ['colour'], additionalProperties: false };
        const structured = await openai.responses.create({
          model: EXPRESS[form],
          input: `What colour is the sky? ${randomUUID()}`,
          text: { format: { type: 'json_schema', name: 'sky', schema, strict: true } },
          max_output_tokens: 400,
        });
        assert.equal(structured.status, 'completed', JSON.stringify(structured));
        assert.equal(typeof (JSON.parse(structured.output_text) as { colour: unknown }).colour, 'string');
        // `null` is absent, as clients send an unset option.
        const ok = await call(apis[form] as Api, 'POST', '/v1/responses', {
          key: org.ownerKey,
          body: { model: EXPRESS[form], input, stream: null, temperature: null, text: null },
        });
        assert.equal(ok.status, 200, JSON.stringify(ok.body));
        // /openapi.json documents the request in this Form.
        const doc = (await (await fetch(`${apis[form]?.url}/openapi.json`)).json()) as {
          paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: { properties: Svc } }> } }>>;
        };
        const props = doc.paths['/v1/responses'].post.requestBody?.content['application/json'].schema.properties ?? {};
        assert.ok('input' in props && 'background' in props && 'max_output_tokens' in props);
        assert.equal('tier' in props, form === 'B');
        assert.ok(doc.paths['/v1/responses/{response_id}'].delete && doc.paths['/v1/responses/{response_id}/cancel'].post);
      });

      it('issue 53: values that ask for nothing pass (an agent without tools, a zod 4 schema, safety_identifier as user); the rest are refused by name', async () => {
        const org = await newOrg();
        const openai = client(apis[form], org.ownerKey);
        const schema = z.toJSONSchema(z.object({ colour: z.string(), certain: z.boolean() }));
        const res = (await openai.responses.create({
          model: EXPRESS[form],
          input: `What colour is the sky? ${randomUUID()}`,
          tools: [],
          include: [],
          tool_choice: 'auto',
          parallel_tool_calls: true,
          truncation: 'disabled',
          service_tier: 'auto',
          reasoning: { effort: null, summary: null },
          safety_identifier: 'end-user-3',
          text: { format: { type: 'json_schema', name: 'sky', schema, strict: true } },
        })) as WithSvc<OpenAI.Responses.Response>;
        assert.equal(res.status, 'completed', JSON.stringify(res));
        assert.deepEqual(Object.keys(JSON.parse(res.output_text) as object).sort(), ['certain', 'colour']);
        const receipt = await call(apis[form] as Api, 'GET', `/v1/receipts/${String(res.svc.request_id)}`, { key: org.ownerKey });
        assert.equal((receipt.body.receipt as Svc).user, 'end-user-3');
        const cases: [Record<string, unknown>, string, string][] = [
          [{ truncation: 'auto' }, 'unsupported_parameter', 'truncation'],
          [{ include: ['reasoning.encrypted_content'] }, 'unsupported_parameter', 'include'],
          [{ service_tier: 'flex' }, 'unsupported_parameter', 'service_tier'],
          [{ reasoning: { effort: 'low' } }, 'unsupported_parameter', 'reasoning'],
          [{ tool_choice: 'required' }, 'unsupported_parameter', 'tool_choice'],
          [{ user: 'a', safety_identifier: 'b' }, 'invalid_request', 'safety_identifier'],
          [
            { text: { format: { type: 'json_schema', name: 'sky', schema: { ...schema, $schema: 'urn:other' } } } },
            'invalid_request',
            'text.format',
          ],
        ];
        for (const [extra, code, param] of cases) {
          const body = { model: EXPRESS[form], input, ...extra };
          const err = await rejection(openai.responses.create(body as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming));
          assert.deepEqual([err.status, err.code, err.param], [400, code, param], JSON.stringify(extra));
        }
      });
    });
  }
});

describe('responses: cancel stops the engine calls and bills what ran (loopback engines)', function () {
  this.timeout(180_000);
  let openai: Loopback;
  let workers: { stop(): Promise<void> };
  const apis: Partial<Record<'A' | 'B', Api>> = {};

  before(async () => {
    openai = await startOpenAiLoopback(script);
    workers = await startProductWorkers({ QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY, QUORUM_OPENAI_BASE_URL: openai.baseUrl });
    for (const form of FORMS) apis[form] = await startApi(form);
  });
  after(async () => {
    for (const api of Object.values(apis)) await api?.close();
    await workers.stop();
    await openai.close();
  });

  /**
   * A background response on a panel of gpt-4.1 and gpt-4.1-mini, cancelled once `seatCalls` seat calls are out (the
   * last, the large seat's, held by the provider): it ends cancelled, its held call aborted, billed exactly what the
   * provider served at the published prices. `critique`: two rounds, the large seat slow only in the second.
   */
  async function cancelMidway(form: 'A' | 'B', critique: boolean, history?: string): Promise<{ receipt: Svc; served: RecordedRequest[] }> {
    const org = await newOrg(10);
    const mode = await customMode(org.orgId, 'quorum-panel', slowSeatPanel(critique));
    const before = await getBalance(stack().db, org.orgId);
    const sdk = client(apis[form], org.ownerKey);
    const seen = openai.requests.length;
    const mine = (): RecordedRequest[] => openai.requests.slice(seen);
    const key = randomUUID();
    const content = `Explain why the sky is blue, step by step. ${critique ? SLOW_CRITIQUE : ''} ${randomUUID()}`;
    const created = await sdk.responses.create(
      { model: form === 'A' ? mode.id : mode.ticker, input: content, background: true },
      { headers: { 'Idempotency-Key': key } },
    );
    // The seats that answer have answered and the large one is waiting on the provider.
    const seatCalls = critique ? 4 : 2;
    await until(() => mine().filter((r) => !isStaff(r)).length === seatCalls, 30_000, `${seatCalls} seat calls out`);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const cancelled = (await sdk.responses.cancel(created.id)) as WithSvc<OpenAI.Responses.Response>;
    assert.equal(cancelled.status, 'cancelled');
    assert.deepEqual(cancelled.output, []);

    // The cancel reached the engine's HTTP request: the held call was aborted, long before it would have answered.
    const held = mine().filter((r) => r.abortedAt !== undefined);
    assert.deepEqual(held.map(modelOf), ['gpt-4.1'], 'the large seat call, and only it, was aborted');
    assert.ok((held[0].abortedAt ?? Infinity) - held[0].receivedAt < SLOW_SEAT_MS / 2);
    const calls = mine().length;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    assert.equal(mine().length, calls, 'no engine call after the cancel');

    const served = mine().filter((r) => r.abortedAt === undefined);
    const { expected, tokens } = servedBill(served, form);

    assert.equal(micros(cancelled.svc.billed_usd), expected);
    assert.deepEqual([cancelled.usage?.input_tokens, cancelled.usage?.output_tokens], [tokens.in, tokens.out]);
    const requestId = String(cancelled.svc.request_id);
    await assertEachBilledOnce(org.orgId, [requestId]);
    const after = await getBalance(stack().db, org.orgId);
    assert.equal(before.balanceMicros - after.balanceMicros, BigInt(expected));
    const got = await call(apis[form] as Api, 'GET', `/v1/receipts/${requestId}`, { key: org.ownerKey });
    const receipt = got.body.receipt as Svc;
    assert.equal(receipt.status, 'cancelled');
    assert.equal(micros(receipt.billed_usd), expected);
    // A poll, and a second cancel, show the same ended response.
    assert.equal((await sdk.responses.retrieve(created.id)).status, 'cancelled');
    assert.equal((await sdk.responses.cancel(created.id)).status, 'cancelled');
    await assertEachBilledOnce(org.orgId, [requestId]);
    if (history) {
      // The replay test keeps the cancel path deterministic (test/unit/workflows/replay.test.ts): its whole history.
      const workflowId = workflowIds.deliberation(org.orgId, key);
      await stack().env.client.workflow.getHandle(workflowId).result();
      await recordHistory(history, workflowId);
    }
    return { receipt, served };
  }

  for (const form of FORMS) {
    for (const stream of [true, false])
      it(`Form ${form}: ${stream ? 'a stream' : 'a plain create'} without background whose caller hangs up is cancelled, billed only for the seat that answered (issue 53)`, async () => {
        const org = await newOrg(10);
        const mode = await customMode(org.orgId, 'quorum-panel', slowSeatPanel(false));
        const before = await getBalance(stack().db, org.orgId);
        const sdk = client(apis[form], org.ownerKey);
        const seen = openai.requests.length;
        const mine = (): RecordedRequest[] => openai.requests.slice(seen);
        const key = randomUUID();
        const id = `resp_${Buffer.from(key).toString('base64url')}`;
        const hangUp = new AbortController();
        const body = { model: form === 'A' ? mode.id : mode.ticker, input: `Explain why the sky is blue, step by step. ${randomUUID()}` };
        const created = stream
          ? sdk.responses.create({ ...body, stream: true }, { headers: { 'Idempotency-Key': key }, signal: hangUp.signal })
          : sdk.responses.create(body, { headers: { 'Idempotency-Key': key }, signal: hangUp.signal });
        created.catch(() => undefined);
        // The small seat has answered and the large one is waiting on the provider: hang up.
        await until(() => mine().filter((r) => !isStaff(r)).length === 2, 30_000, 'both seat calls out');
        await new Promise((resolve) => setTimeout(resolve, 500));
        hangUp.abort();
        await until(
          async () => {
            await new Promise((resolve) => setTimeout(resolve, 250));
            return (await sdk.responses.retrieve(id)).status === 'cancelled';
          },
          30_000,
          'the hung-up response cancelled',
        );
        const held = mine().filter((r) => r.abortedAt !== undefined);
        assert.deepEqual(held.map(modelOf), ['gpt-4.1'], 'the large seat call, and only it, was aborted');
        const served = mine().filter((r) => r.abortedAt === undefined);
        assert.deepEqual(served.map(modelOf), ['gpt-4.1-mini']);
        const { expected } = servedBill(served, form);
        const ended = (await sdk.responses.retrieve(id)) as WithSvc<OpenAI.Responses.Response>;
        assert.equal(micros(ended.svc.billed_usd), expected);
        await assertEachBilledOnce(org.orgId, [String(ended.svc.request_id)]);
        const after = await getBalance(stack().db, org.orgId);
        assert.equal(before.balanceMicros - after.balanceMicros, BigInt(expected));
      });

    it(`Form ${form}: a background response cancelled mid-panel ends cancelled, its slow call aborted, billed only for the seat that answered`, async () => {
      const { receipt, served } = await cancelMidway(form, false, `cancelled-form-${form.toLowerCase()}`);
      assert.deepEqual(served.map(modelOf), ['gpt-4.1-mini']);
      assert.deepEqual(
        (receipt.seats as Svc[]).map((s) => s.model_used),
        ['openai/gpt-4.1-mini'],
      );
    });
  }

  it('Form B: cancelled in the critique round, after the judge: the first round, the judge and the revision that answered are billed', async () => {
    const { receipt, served } = await cancelMidway('B', true);
    assert.deepEqual(
      served
        .filter((r) => !isStaff(r))
        .map(modelOf)
        .sort(),
      ['gpt-4.1', 'gpt-4.1-mini', 'gpt-4.1-mini'],
    );
    assert.equal(served.filter((r) => r.bodyText.includes(JUDGE_TAG)).length, 1);
    assert.deepEqual(
      (receipt.seats as Svc[]).map((s) => [s.model_used, s.round_number]).sort(),
      [
        ['openai/gpt-4.1', 1],
        ['openai/gpt-4.1-mini', 1],
        ['openai/gpt-4.1-mini', 2],
      ].sort(),
    );
    assert.equal((receipt.staff as { judge: Svc | null }).judge?.model_used, 'openai/gpt-4.1');
  });
});
