import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import OpenAI, { APIError } from 'openai';
import { z } from 'zod';
import type { ChatCompletionCreateParamsBase } from 'openai/resources/chat/completions/completions';
import type { Form } from '../../../domain/form';
import { JUDGE_TAG } from '../../../domain/prompts';
import { getBalance } from '../../../db/repositories/ledger';
import { stack } from '../../harness/stack';
import {
  OPENAI_TEST_KEY,
  openAiReply,
  startOpenAiLoopback,
  type Loopback,
  type RecordedRequest,
  type Reply,
} from '../../fixtures/providers';
import { assertNothingBilled, customMode, startProductWorkers } from '../deliberation/helpers';
import { call, EXPRESS, FORMS, newKey, newOrg, PANEL, startApi, type Api, type TestOrg } from './helpers';

/**
 * Issue 40 items 4 and 7: every parameter of OpenAI's chat completion request, honoured (and shown to be, from what the
 * engines were sent and what came back) or refused with its name, in both Forms, through the official Node client.
 * The OpenAI seats and the synthesis (gpt-4.1, gpt-4.1-mini) run on a loopback OpenAI server that records each request;
 * the other families' seats are simulated.
 */
type Params = ChatCompletionCreateParamsBase;
type Completion = OpenAI.Chat.Completions.ChatCompletion & { svc: Record<string, unknown> };

/** What a honoured parameter's call left to look at. */
interface Seen {
  form: Form;
  res: Completion;
  /** The loopback's requests of this call (its marker is in every prompt), seats and synthesis. */
  sent: Record<string, unknown>[];
  receipt: () => Promise<Record<string, unknown>>;
}

type Case =
  { refused: unknown; accepted?: unknown } | { honoured: unknown; mode: 'panel' | 'express'; check: (seen: Seen) => void | Promise<void> };

/** The schema a `json_schema` call asks for; the loopback answers a value valid against it, as an enforcing server does. */
const CITY = {
  type: 'object',
  properties: { city: { type: 'string' }, population: { type: 'integer', minimum: 0 }, capital: { type: 'boolean' } },
  required: ['city', 'population', 'capital'],
  additionalProperties: false,
};

const isJudge = (body: Record<string, unknown>): boolean => JSON.stringify(body.messages).includes(JUDGE_TAG);

/** Every seat and synthesis call carried the value; the judge, whose verdict is Quorum's own structured reply, did not. */
const every = (sent: Record<string, unknown>[], field: string, value: unknown): void => {
  const writers = sent.filter((b) => !isJudge(b));
  assert.ok(writers.length > 0, 'no seat or synthesis call reached the loopback');
  for (const body of writers) assert.deepEqual(body[field], value, `${field} in ${JSON.stringify(body).slice(0, 200)}`);
  for (const body of sent.filter(isJudge)) assert.equal(field in body, false, `${field} sent to the judge`);
};

/** Each key of OpenAI's request type (checked by the compiler, and against the package's own declaration below). */
const CASES: { [K in keyof Required<Params>]: Case } = {
  messages: { honoured: undefined, mode: 'panel', check: ({ res }) => assert.ok(res.choices[0].message.content) },
  model: { honoured: undefined, mode: 'panel', check: ({ res, form }) => assert.equal(res.model, PANEL[form]) },
  max_tokens: {
    honoured: 7,
    mode: 'express',
    check: ({ res, sent }) => {
      // The loopback stops at the limit and says so: the answer is cut and not retried with more room.
      every(sent, 'max_tokens', 7);
      assert.equal(sent.length, 1);
      assert.equal(res.choices[0].finish_reason, 'length');
      assert.equal(res.usage?.completion_tokens, 7);
    },
  },
  max_completion_tokens: {
    honoured: 9,
    mode: 'express',
    check: ({ res, sent }) => {
      every(sent, 'max_tokens', 9);
      assert.equal(res.choices[0].finish_reason, 'length');
      assert.equal(res.usage?.completion_tokens, 9);
    },
  },
  temperature: { honoured: 0.3, mode: 'panel', check: ({ sent }) => every(sent, 'temperature', 0.3) },
  top_p: { honoured: 0.5, mode: 'panel', check: ({ sent }) => every(sent, 'top_p', 0.5) },
  seed: { honoured: 42, mode: 'panel', check: ({ sent }) => every(sent, 'seed', 42) },
  stop: { honoured: 'END', mode: 'panel', check: ({ sent }) => every(sent, 'stop', ['END']) },
  user: {
    honoured: 'end-user-7',
    mode: 'express',
    check: async ({ receipt }) => assert.equal((await receipt()).user, 'end-user-7'),
  },
  metadata: {
    honoured: { project: 'atlas', ticket: 'T-1' },
    mode: 'express',
    check: async ({ receipt }) => assert.deepEqual((await receipt()).metadata, { project: 'atlas', ticket: 'T-1' }),
  },
  response_format: {
    honoured: { type: 'json_schema', json_schema: { name: 'city', strict: true, schema: CITY } },
    mode: 'panel',
    check: ({ res, sent }) => {
      const answer = JSON.parse(res.choices[0].message.content ?? '') as Record<string, unknown>;
      assert.deepEqual(Object.keys(answer).sort(), ['capital', 'city', 'population']);
      assert.equal(typeof answer.city, 'string');
      assert.ok(Number.isInteger(answer.population) && (answer.population as number) >= 0);
      assert.equal(typeof answer.capital, 'boolean');
      // The synthesis asked for it the protocol's own way; the seats answered freely.
      const synthesis = sent.filter((b) => JSON.stringify(b.messages).includes('Write the single best answer'));
      assert.equal(synthesis.length, 1);
      assert.deepEqual(synthesis[0].response_format, { type: 'json_schema', json_schema: { name: 'city', strict: true, schema: CITY } });
    },
  },
  stream: { honoured: false, mode: 'express', check: ({ res }) => assert.equal(res.object, 'chat.completion') },
  safety_identifier: {
    honoured: 'end-user-9',
    mode: 'express',
    check: async ({ receipt }) => assert.equal((await receipt()).user, 'end-user-9'),
  },
  // Issue 53 item 2: each refused at a value that asks for something, and accepted (a no-op) at one that asks for nothing.
  n: { refused: 2, accepted: 1 },
  logprobs: { refused: true, accepted: false },
  modalities: { refused: ['text', 'audio'], accepted: ['text'] },
  store: { refused: 'yes', accepted: false },
  top_logprobs: { refused: 2, accepted: 0 },
  logit_bias: { refused: { '50256': -100 }, accepted: {} },
  frequency_penalty: { refused: 0.5, accepted: 0 },
  presence_penalty: { refused: 0.5, accepted: 0 },
  tools: { refused: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }], accepted: [] },
  tool_choice: { refused: 'required', accepted: 'auto' },
  parallel_tool_calls: { refused: 'yes', accepted: true },
  functions: { refused: [{ name: 'f', parameters: { type: 'object' } }], accepted: [] },
  function_call: { refused: { name: 'f' }, accepted: 'none' },
  audio: { refused: { voice: 'alloy', format: 'wav' } },
  prediction: { refused: { type: 'content', content: 'x' } },
  reasoning_effort: { refused: 'low' },
  verbosity: { refused: 'low' },
  service_tier: { refused: 'flex', accepted: 'auto' },
  web_search_options: { refused: {} },
  prompt_cache_key: { refused: 'k' },
  prompt_cache_retention: { refused: '24h' },
  prompt_cache_options: { refused: {} },
  moderation: { refused: {} },
  stream_options: { refused: { include_usage: true } },
};

/** The request interface's keys as the installed `openai` package declares them. */
function declaredParams(): string[] {
  const file = path.join(require.resolve('openai'), '..', 'resources', 'chat', 'completions', 'completions.d.ts');
  const text = fs.readFileSync(file, 'utf8');
  const body = /export interface ChatCompletionCreateParamsBase \{([\s\S]*?)\n\}/.exec(text)?.[1] ?? '';
  return [...body.matchAll(/^ {4}([a-z_]+)\??:/gm)].map((m) => m[1] ?? '');
}

/** The loopback's answer: JSON when asked for it, cut at a small limit, else prose. */
function script(req: RecordedRequest): Reply {
  const body = req.body as { max_tokens?: number; response_format?: { type: string } };
  if (req.bodyText.includes('[[bad-json]]') && body.response_format) return openAiReply({ text: 'Paris, with about two million people.' });
  if (body.response_format?.type === 'json_schema')
    return openAiReply({ text: JSON.stringify({ city: 'Paris', population: 2102650, capital: true }) });
  if (body.response_format?.type === 'json_object') return openAiReply({ text: '{"city": "Paris"}' });
  if (body.max_tokens !== undefined && body.max_tokens < 64)
    return openAiReply({ text: 'The sky is blue because', finish: 'length', completionTokens: body.max_tokens });
  return openAiReply({ text: 'The sky is blue because of Rayleigh scattering. END Mie scattering whitens clouds.', completionTokens: 16 });
}

describe('OpenAI chat completion parameters: honoured or refused by name, never dropped (issue 40)', function () {
  this.timeout(300_000);
  let openai: Loopback;
  let workers: { stop(): Promise<void> };
  const apis: Partial<Record<Form, Api>> = {};
  let org: TestOrg;
  let key: string;

  before(async () => {
    openai = await startOpenAiLoopback(script);
    workers = await startProductWorkers({
      QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY,
      QUORUM_OPENAI_BASE_URL: openai.baseUrl,
      QUORUM_SIM_LATENCY: 'fixed:20',
    });
    for (const form of FORMS) apis[form] = await startApi(form);
    org = await newOrg(50);
    key = await newKey(org.orgId, { limits: { requestsPerMinute: 10_000, concurrency: 20 } });
  });
  after(async () => {
    for (const api of Object.values(apis)) await api?.close();
    await workers?.stop();
    await openai?.close();
  });

  it("the table covers exactly the parameters the installed openai package's ChatCompletionCreateParams declares", () => {
    assert.deepEqual(Object.keys(CASES).sort(), declaredParams().sort());
  });

  for (const form of FORMS) {
    describe(`Form ${form}`, () => {
      const client = (): OpenAI => new OpenAI({ baseURL: `${apis[form]?.url}/v1`, apiKey: key, maxRetries: 0, timeout: 120_000 });
      const create = async (body: Record<string, unknown>): Promise<Completion> =>
        (await client().chat.completions.create(
          body as unknown as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming,
        )) as Completion;
      const question = (marker: string): OpenAI.Chat.Completions.ChatCompletionMessageParam[] => [
        { role: 'user', content: `Explain why the sky is blue, and compare Rayleigh with Mie scattering step by step. ${marker}` },
      ];
      const refusal = async (body: Record<string, unknown>): Promise<APIError> => {
        const err = await create(body).then(
          () => undefined,
          (e: unknown) => e,
        );
        assert.ok(err instanceof APIError, `expected a refusal, got ${String(err)}`);
        return err;
      };

      for (const [param, c] of Object.entries(CASES) as [string, Case][]) {
        if ('refused' in c) {
          it(`${param}: refused, 400 unsupported_parameter naming it${c.accepted === undefined ? '' : `; ${JSON.stringify(c.accepted)} is accepted`}`, async () => {
            const before = await getBalance(stack().db, org.orgId);
            const err = await refusal({ model: PANEL[form], messages: question(randomUUID()), [param]: c.refused });
            assert.deepEqual([err.status, err.code, err.param, err.type], [400, 'unsupported_parameter', param, 'invalid_request_error']);
            assert.match(err.message, new RegExp(`\`${param}\``));
            assert.deepEqual(await getBalance(stack().db, org.orgId), before, 'nothing held or billed');
            if (c.accepted !== undefined) {
              const res = await create({ model: EXPRESS[form], messages: question(randomUUID()), [param]: c.accepted });
              assert.ok(res.choices[0].message.content);
            }
          });
        } else {
          it(`${param}: honoured`, async () => {
            const marker = randomUUID();
            const model = c.mode === 'panel' ? PANEL[form] : EXPRESS[form];
            const res = await create({ model, messages: question(marker), ...(c.honoured !== undefined && { [param]: c.honoured }) });
            const sent = openai.requests.filter((r) => r.bodyText.includes(marker)).map((r) => r.body as Record<string, unknown>);
            const receipt = async (): Promise<Record<string, unknown>> => {
              const got = await call(apis[form] as Api, 'GET', `/v1/receipts/${String(res.svc.request_id)}`, { key });
              assert.equal(got.status, 200, JSON.stringify(got.body));
              return got.body.receipt as Record<string, unknown>;
            };
            await c.check({ form, res, sent, receipt });
          });
        }
      }

      it('issue 53: a JSON Schema as zod 4 writes it ($schema 2020-12) is honoured; an unknown $schema is 400 naming it', async () => {
        const City = z.object({ city: z.string(), population: z.number().int().nonnegative(), capital: z.boolean() });
        const schema = z.toJSONSchema(City) as Record<string, unknown>;
        assert.equal(schema.$schema, 'https://json-schema.org/draft/2020-12/schema');
        const res = await create({
          model: EXPRESS[form],
          messages: question(randomUUID()),
          response_format: { type: 'json_schema', json_schema: { name: 'city', strict: true, schema } },
        });
        assert.deepEqual(Object.keys(JSON.parse(res.choices[0].message.content ?? '') as object).sort(), ['capital', 'city', 'population']);
        const err = await refusal({
          model: EXPRESS[form],
          messages: question(randomUUID()),
          response_format: {
            type: 'json_schema',
            json_schema: { name: 'city', schema: { ...schema, $schema: 'http://json-schema.org/draft-04/schema#' } },
          },
        });
        assert.deepEqual([err.status, err.code, err.param], [400, 'invalid_request', 'response_format']);
        assert.match(err.message, /"http:\/\/json-schema\.org\/draft-04\/schema#" is not a dialect Quorum checks/);
      });

      it('issue 53: what an SDK sends by default passes together; stream: true points to /v1/responses; user and another safety_identifier is 400', async () => {
        const res = await create({
          model: EXPRESS[form],
          messages: question(randomUUID()),
          frequency_penalty: 0,
          presence_penalty: 0,
          logit_bias: {},
          tools: [],
          tool_choice: 'none',
          parallel_tool_calls: false,
          store: false,
          service_tier: 'default',
        });
        assert.ok(res.choices[0].message.content);
        const stream = await call(apis[form] as Api, 'POST', '/v1/chat/completions', {
          key,
          body: { model: EXPRESS[form], messages: question(randomUUID()), stream: true, stream_options: { include_usage: true } },
        });
        assert.equal(stream.status, 400);
        assert.deepEqual([stream.body.error?.code, stream.body.error?.param], ['stream_not_supported', 'stream']);
        assert.match(String(stream.body.error?.message), /`POST \/v1\/responses` with `stream: true`/);
        const err = await refusal({ model: EXPRESS[form], messages: question(randomUUID()), user: 'a', safety_identifier: 'b' });
        assert.deepEqual([err.status, err.code, err.param], [400, 'invalid_request', 'safety_identifier']);
        // /openapi.json says which values pass, from the same table.
        const doc = (await (await fetch(`${apis[form]?.url}/openapi.json`)).json()) as {
          paths: Record<string, Record<string, { description?: string }>>;
        };
        const description = doc.paths['/v1/chat/completions'].post.description ?? '';
        for (const [param, c] of Object.entries(CASES) as [string, Case][])
          if ('refused' in c) assert.ok(description.includes(`\`${param}\``), param);
        assert.ok(description.includes('`frequency_penalty` (accepted at `0`)'), description);
      });

      it('json_object: the answer is a JSON object', async () => {
        const res = await create({ model: EXPRESS[form], messages: question(randomUUID()), response_format: { type: 'json_object' } });
        assert.deepEqual(JSON.parse(res.choices[0].message.content ?? ''), { city: 'Paris' });
      });

      it('an answer that does not meet the schema: 502 response_format_failed, nothing billed', async () => {
        const o = await newOrg(5);
        const before = await getBalance(stack().db, o.orgId);
        const err = await new OpenAI({ baseURL: `${apis[form]?.url}/v1`, apiKey: o.ownerKey, maxRetries: 0 }).chat.completions
          .create({
            model: EXPRESS[form],
            messages: question(`[[bad-json]] ${randomUUID()}`),
            response_format: { type: 'json_schema', json_schema: { name: 'city', strict: true, schema: CITY } },
          })
          .then(
            () => undefined,
            (e: unknown) => e,
          );
        assert.ok(err instanceof APIError, String(err));
        assert.deepEqual([err.status, err.code], [502, 'response_format_failed']);
        assert.match(err.message, /not JSON/);
        await assertNothingBilled(o.orgId, before, 'response_format_failed');
      });

      it('an unknown key is 400 unknown_parameter naming it; null is absent', async () => {
        const err = await refusal({ model: PANEL[form], messages: question(randomUUID()), bogus_parameter: 1 });
        assert.deepEqual([err.status, err.code, err.param], [400, 'unknown_parameter', 'bogus_parameter']);
        const res = await create({
          model: EXPRESS[form],
          messages: question(randomUUID()),
          bogus_parameter: null,
          tools: null,
          n: null,
          temperature: null,
          response_format: null,
        });
        assert.ok(res.choices[0].message.content);
      });

      it("a mode whose seats set their own temperature refuses the caller's, naming it", async () => {
        const o = await newOrg(5);
        const mode = await customMode(o.orgId, 'quorum-panel', {
          tiers: {
            experience: { seats: ['sim/alpha-experience'] },
            plus: { seats: ['sim/alpha-plus', 'sim/beta-plus'], tunings: [{ temperature: 0.2 }, { temperature: 1.1 }] },
          },
        });
        const model = form === 'A' ? mode.id : mode.ticker;
        const err = await new OpenAI({ baseURL: `${apis[form]?.url}/v1`, apiKey: o.ownerKey, maxRetries: 0 }).chat.completions
          .create({ model, messages: question(randomUUID()), temperature: 0.5 })
          .then(
            () => undefined,
            (e: unknown) => e,
          );
        assert.ok(err instanceof APIError, String(err));
        assert.deepEqual([err.status, err.code, err.param], [400, 'unsupported_parameter', 'temperature']);
      });

      it('x-request-id and the x-ratelimit-* headers, from the key’s own limiter, on answers and errors', async () => {
        const limited = await newKey(org.orgId, { limits: { requestsPerMinute: 5, concurrency: 5 } });
        const api = apis[form] as Api;
        const first = await call(api, 'GET', '/v1/models', { key: limited });
        const second = await call(api, 'GET', `/v1/models/no-such-model`, { key: limited });
        assert.equal(second.status, 404);
        const rate = (r: typeof first): [string | null, string | null] => [
          r.headers.get('x-ratelimit-limit-requests'),
          r.headers.get('x-ratelimit-remaining-requests'),
        ];
        assert.deepEqual(rate(first), ['5', '4']);
        assert.deepEqual(rate(second), ['5', '3']);
        for (const r of [first, second]) {
          const reset = r.headers.get('x-ratelimit-reset-requests') ?? '';
          // The window empties a minute after its newest request: just under 60 s from now.
          const m = /^(?:(\d+)m)?(\d+(?:\.\d+)?)s$/.exec(reset);
          assert.ok(m, reset);
          const ms = Number(m[1] ?? 0) * 60_000 + Number(m[2]) * 1000;
          assert.ok(ms > 50_000 && ms <= 60_000, reset);
          assert.match(r.headers.get('x-request-id') ?? '', /^req_[0-9a-f]{24}$/);
        }
        for (let i = 0; i < 3; i++) await call(api, 'GET', '/v1/models', { key: limited });
        const refused = await call(api, 'GET', '/v1/models', { key: limited });
        assert.equal(refused.status, 429);
        assert.deepEqual(rate(refused), ['5', '0']);

        const completion = await create({ model: EXPRESS[form], messages: question(randomUUID()) });
        const raw = await client()
          .chat.completions.create({ model: EXPRESS[form], messages: question(randomUUID()) })
          .withResponse();
        assert.equal(raw.response.headers.get('x-request-id'), (raw.data as Completion).svc.request_id);
        assert.match(String(completion.svc.request_id), /^req_/);
        const health = await fetch(`${api.url}/healthz`);
        assert.match(health.headers.get('x-request-id') ?? '', /^req_/);
      });

      it('models.retrieve: a mode this key may call, as the list shows it; 404 model_not_found otherwise', async () => {
        const listed = (await client().models.list()).data;
        const got = await client().models.retrieve(PANEL[form]);
        assert.deepEqual(
          got,
          listed.find((m) => m.id === PANEL[form]),
        );
        const o = await newOrg(5);
        const theirs = await customMode(o.orgId, 'quorum-panel', {});
        for (const id of ['no-such-model', form === 'A' ? theirs.id : theirs.ticker]) {
          const err = await client()
            .models.retrieve(id)
            .then(
              () => undefined,
              (e: unknown) => e,
            );
          assert.ok(err instanceof APIError, String(err));
          assert.deepEqual([err.status, err.code], [404, 'model_not_found']);
        }
        // A key limited to one mode retrieves only that one.
        const one = await newKey(org.orgId, { allowedModes: [form === 'A' ? 'quorum-express' : 'QRM:EXPR'] });
        const narrow = new OpenAI({ baseURL: `${apis[form]?.url}/v1`, apiKey: one, maxRetries: 0 });
        assert.equal((await narrow.models.retrieve(EXPRESS[form])).id, EXPRESS[form]);
        const err = await narrow.models.retrieve(PANEL[form]).then(
          () => undefined,
          (e: unknown) => e,
        );
        assert.ok(err instanceof APIError && err.status === 404, String(err));
      });
    });
  }
});
