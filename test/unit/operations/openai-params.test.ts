import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { parseRequest } from '../../../operations/requests/common';
import { formARequests } from '../../../operations/requests/a';
import { formBRequests } from '../../../operations/requests/b';
import { CHAT_UNHONOURED, checkParameters, type Unhonoured } from '../../../operations/requests/openai-params';
import { parseResponseRequest, RESPONSES_HONOURED, RESPONSES_UNHONOURED, responseRequestDoc } from '../../../operations/requests/responses';
import { derivedIdempotencyKey } from '../../../operations/completion';
import { CALLER_ANSWER_KINDS } from '../../../domain/aggregation';
import { refusal } from './refusal';

/** Issue 40 item 4: OpenAI's parameters parsed into the one internal shape (`CallOptions`), or refused by name. */
const BASE = { model: 'QRM:PANL', messages: [{ role: 'user', content: 'Hi' }] };

describe('OpenAI parameters: parsed into CallOptions or refused by name', () => {
  const parse = (body: Record<string, unknown>): ReturnType<typeof formBRequests.completion.parse> => {
    checkParameters(body, formBRequests.completionKeys);
    return parseRequest(formBRequests.completion, body);
  };

  it('every honoured parameter lands in one place; the smaller of the two output limits holds; a stop string is a list', () => {
    const body = parse({
      ...BASE,
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } },
      max_tokens: 50,
      max_completion_tokens: 20,
      temperature: 0.2,
      top_p: 0.9,
      seed: 3,
      stop: 'END',
      user: 'u-1',
      metadata: { a: 'b' },
    });
    assert.deepEqual(body.options, {
      answer: {
        format: { type: 'json_schema', name: 'x', schema: { type: 'object' }, strict: false },
        maxOutputTokens: 20,
        sampling: { temperature: 0.2, topP: 0.9, seed: 3, stop: ['END'] },
      },
      user: 'u-1',
      metadata: { a: 'b' },
    });
  });

  it('none sent, or all null, or `response_format: text`: no options, so the call (and its derived key) is as before', () => {
    assert.equal(parse(BASE).options, undefined);
    assert.equal(parse({ ...BASE, temperature: null, tools: null, n: null, response_format: { type: 'text' } }).options, undefined);
  });

  it('refused and unknown keys name themselves; a value out of range names its field', () => {
    for (const [key, value, code] of [
      ['n', 2, 'unsupported_parameter'],
      ['tools', [{ type: 'function', function: { name: 'f' } }], 'unsupported_parameter'],
      ['store', 'yes', 'unsupported_parameter'],
      ['bogus_parameter', 1, 'unknown_parameter'],
    ] as const) {
      const err = refusal(() => parse({ ...BASE, [key]: value }));
      assert.deepEqual([err.code, err.param], [code, key]);
    }
    for (const [key, value] of [
      ['temperature', 3],
      ['stop', ['a', 'b', 'c', 'd', 'e']],
      ['metadata', Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']))],
      ['response_format', { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'no-such-type' } } }],
    ] as const) {
      const err = refusal(() => parse({ ...BASE, [key]: value }));
      assert.deepEqual([err.code, err.param], ['invalid_request', key]);
    }
  });

  it('Form A takes the same parameters and still ignores `tier`', () => {
    checkParameters({ ...BASE, tier: 'ultra', seed: 1 }, formARequests.completionKeys);
    const body = parseRequest(formARequests.completion, { ...BASE, model: 'quorum-panel', tier: 'ultra', seed: 1 });
    assert.equal(body.tier, undefined);
    assert.deepEqual(body.options, { answer: { sampling: { seed: 1 } } });
  });
});

describe('svc.answer_kind (issue 52): parsed into AnswerOptions.answerKind, or refused naming the values', () => {
  const FORMS = [
    ['A', formARequests, { ...BASE, model: 'quorum-panel' }],
    ['B', formBRequests, BASE],
  ] as const;

  for (const [form, requests, base] of FORMS) {
    it(`Form ${form}: each caller kind lands among the answer's options, beside OpenAI's; svc keeps the rest`, () => {
      for (const kind of CALLER_ANSWER_KINDS) {
        const body = parseRequest(requests.completion, { ...base, svc: { answer_kind: kind, other: 1 }, seed: 4 });
        assert.deepEqual(body.options, { answer: { sampling: { seed: 4 }, answerKind: { kind } } });
        assert.deepEqual(body.svc, { other: 1 });
      }
    });

    it(`Form ${form}: absent or null is no kind, and the call (its derived key) is as without it`, () => {
      assert.equal(parseRequest(requests.completion, { ...base, svc: { answer_kind: null } }).options, undefined);
      const plain = parseRequest(requests.completion, base);
      assert.equal(plain.options, undefined);
      assert.equal(plain.svc, undefined);
    });

    it(`Form ${form}: another value is 400 invalid_request naming svc.answer_kind and the values allowed`, () => {
      for (const bad of ['math', 'Number', 3, true, { kind: 'number' }]) {
        const err = refusal(() => parseRequest(requests.completion, { ...base, svc: { answer_kind: bad } }));
        assert.deepEqual([err.code, err.param, err.spec.status], ['invalid_request', 'svc.answer_kind', 400]);
        assert.match(err.message, /svc\.answer_kind.*choice, yes_no, number, short_text/);
      }
    });

    it(`Form ${form}: on /v1/responses too, in svc as on chat completions`, () => {
      const input = 'Hi';
      const parsed = parseResponseRequest(form, requests, { model: base.model, input, svc: { answer_kind: 'yes_no' } });
      assert.deepEqual(parsed.completion.options, { answer: { answerKind: { kind: 'yes_no' } } });
      const err = refusal(() => parseResponseRequest(form, requests, { model: base.model, input, svc: { answer_kind: 'maybe' } }));
      assert.deepEqual([err.code, err.param], ['invalid_request', 'svc.answer_kind']);
    });
  }

  it('two calls differing only in answer_kind are two calls: their derived keys differ (the fingerprint hashes the same options)', () => {
    const key = (svc?: Record<string, unknown>): string =>
      derivedIdempotencyKey('org_1', 'key_1', parseRequest(formBRequests.completion, { ...BASE, ...(svc && { svc }) }));
    const keys = [key(), key({ answer_kind: 'number' }), key({ answer_kind: 'short_text' })];
    assert.equal(new Set(keys).size, 3);
    // Without the kind (absent, null, or in an empty svc as before), the key is the one it always was.
    assert.equal(key({ answer_kind: null }), key({}));
  });
});

/** Per parameter Quorum does not honour: values that ask for nothing (accepted) and values that ask for more (refused). */
interface Values {
  noop: unknown[];
  refused: unknown[];
}

const TOOL = { type: 'function', function: { name: 'f', parameters: { type: 'object' } } };

/** Every row of CHAT_UNHONOURED (checked below), each with what passes and what is refused. */
const CHAT_CASES: Record<string, Values> = {
  frequency_penalty: { noop: [0], refused: [0.5, -1] },
  presence_penalty: { noop: [0], refused: [0.5] },
  logit_bias: { noop: [{}], refused: [{ '50256': -100 }] },
  tools: { noop: [[]], refused: [[TOOL]] },
  tool_choice: { noop: ['none', 'auto'], refused: ['required', { type: 'function', function: { name: 'f' } }] },
  parallel_tool_calls: { noop: [true, false], refused: ['yes'] },
  functions: { noop: [[]], refused: [[{ name: 'f', parameters: { type: 'object' } }]] },
  function_call: { noop: ['none', 'auto'], refused: [{ name: 'f' }] },
  store: { noop: [true, false], refused: ['no'] },
  service_tier: { noop: ['auto', 'default'], refused: ['flex', 'priority', 'scale'] },
  top_logprobs: { noop: [0], refused: [2] },
  n: { noop: [1], refused: [2] },
  logprobs: { noop: [false], refused: [true] },
  modalities: { noop: [['text']], refused: [['text', 'audio'], []] },
  audio: { noop: [], refused: [{ voice: 'alloy', format: 'wav' }] },
  prediction: { noop: [], refused: [{ type: 'content', content: 'x' }] },
  reasoning_effort: { noop: [], refused: ['low', 'none'] },
  verbosity: { noop: [], refused: ['low', 'medium'] },
  web_search_options: { noop: [], refused: [{}] },
  prompt_cache_key: { noop: [], refused: ['k'] },
  prompt_cache_retention: { noop: [], refused: ['24h', 'in_memory'] },
  prompt_cache_options: { noop: [], refused: [{}] },
  moderation: { noop: [], refused: [{}] },
  stream_options: { noop: [], refused: [{ include_usage: true }, {}] },
};

/** Every row of RESPONSES_UNHONOURED (checked below). */
const RESPONSES_CASES: Record<string, Values> = {
  tools: { noop: [[]], refused: [[{ type: 'web_search' }], [TOOL]] },
  tool_choice: { noop: ['none', 'auto'], refused: ['required', { type: 'web_search' }] },
  parallel_tool_calls: { noop: [true, false], refused: [1] },
  max_tool_calls: { noop: [0, 5], refused: [-1, 'many'] },
  include: { noop: [[]], refused: [['reasoning.encrypted_content'], ['message.output_text.logprobs']] },
  truncation: { noop: ['disabled'], refused: ['auto'] },
  service_tier: { noop: ['auto', 'default'], refused: ['flex'] },
  reasoning: {
    noop: [{}, { effort: null, summary: null }, { generate_summary: null }],
    refused: [{ effort: 'low' }, { summary: 'auto' }, { effort: null, mode: 'pro' }],
  },
  context_management: { noop: [[]], refused: [[{ type: 'compaction' }]] },
  top_logprobs: { noop: [0], refused: [3] },
  stream_options: { noop: [{}, { include_obfuscation: false }], refused: [{ include_obfuscation: true }, { include_usage: true }] },
  conversation: { noop: [], refused: ['conv_1', { id: 'conv_1' }] },
  prompt: { noop: [], refused: [{ id: 'pmpt_1' }] },
  prompt_cache_key: { noop: [], refused: ['k'] },
  prompt_cache_retention: { noop: [], refused: ['24h'] },
  prompt_cache_options: { noop: [], refused: [{}] },
  moderation: { noop: [], refused: [{}] },
};

describe('issue 53 item 2: values that ask for nothing pass; what cannot be honoured is refused by name', () => {
  const chat = (body: Record<string, unknown>): ReturnType<typeof formBRequests.completion.parse> => {
    const full = { ...BASE, ...body };
    checkParameters(full, formBRequests.completionKeys);
    return parseRequest(formBRequests.completion, full);
  };
  const response = (body: Record<string, unknown>): ReturnType<typeof parseResponseRequest> =>
    parseResponseRequest('B', formBRequests, { model: BASE.model, input: 'Hi', ...body });
  const keyOf = (body: Record<string, unknown>): string => derivedIdempotencyKey('org_1', 'key_1', chat(body));

  it('each row of both tables has its cases here', () => {
    assert.deepEqual(Object.keys(CHAT_CASES).sort(), Object.keys(CHAT_UNHONOURED).sort());
    assert.deepEqual(Object.keys(RESPONSES_CASES).sort(), Object.keys(RESPONSES_UNHONOURED).sort());
  });

  for (const [endpoint, cases, send] of [
    ['chat completions', CHAT_CASES, chat],
    ['responses', RESPONSES_CASES, (b: Record<string, unknown>) => response({ stream: true, ...b }).completion],
  ] as const) {
    for (const [param, { noop, refused }] of Object.entries(cases)) {
      it(`${endpoint}: ${param}${noop.length > 0 ? ` at ${noop.map((v) => JSON.stringify(v)).join(', ')} passes and changes nothing;` : ''} ${refused.map((v) => JSON.stringify(v)).join(', ')} is 400 unsupported_parameter naming it`, () => {
        for (const value of noop) assert.equal(send({ [param]: value }).options, undefined, JSON.stringify(value));
        for (const value of refused) {
          const err = refusal(() => send({ [param]: value }));
          assert.deepEqual([err.code, err.param, err.spec.status], ['unsupported_parameter', param, 400], JSON.stringify(value));
          assert.ok(err.message.startsWith(`\`${param}\` is not supported`), err.message);
          const rule = (endpoint === 'responses' ? RESPONSES_UNHONOURED : CHAT_UNHONOURED)[param];
          if (rule?.noop) assert.ok(err.message.includes(rule.noop.values), err.message);
        }
      });
    }
  }

  it('chat completions: what an SDK sends by default, all at once, is the call without it (the same derived key)', () => {
    const defaults = {
      frequency_penalty: 0,
      presence_penalty: 0,
      logit_bias: {},
      tools: [],
      tool_choice: 'auto',
      parallel_tool_calls: true,
      store: false,
      service_tier: 'auto',
      n: 1,
      logprobs: false,
      top_logprobs: 0,
    };
    assert.equal(chat(defaults).options, undefined);
    assert.equal(keyOf(defaults), keyOf({}));
  });

  it('responses: what the Agents SDK sends for an agent without tools passes', () => {
    const parsed = response({
      tools: [],
      include: [],
      tool_choice: 'auto',
      parallel_tool_calls: false,
      truncation: 'disabled',
      service_tier: 'auto',
      reasoning: { effort: null, summary: null },
      store: true,
      context_management: [],
      max_tool_calls: null,
    });
    assert.equal(parsed.completion.options, undefined);
    assert.equal(parsed.store, true);
  });

  it('safety_identifier is read as user on both endpoints; the same value as user passes; another is 400 invalid_request naming it', () => {
    assert.deepEqual(chat({ safety_identifier: 'u-7' }).options, { user: 'u-7' });
    assert.deepEqual(chat({ safety_identifier: 'u-7', user: 'u-7' }).options, { user: 'u-7' });
    assert.equal(keyOf({ safety_identifier: 'u-7' }), keyOf({ user: 'u-7' }));
    assert.deepEqual(response({ safety_identifier: 'u-7' }).completion.options, { user: 'u-7' });
    for (const send of [chat, (b: Record<string, unknown>) => response(b).completion]) {
      const err = refusal(() => send({ user: 'u-7', safety_identifier: 'u-8' }));
      assert.deepEqual([err.code, err.param, err.spec.status], ['invalid_request', 'safety_identifier', 400]);
      assert.match(err.message, /another end user than `user`/);
    }
    const long = refusal(() => chat({ safety_identifier: 'x'.repeat(257) }));
    assert.deepEqual([long.code, long.param], ['invalid_request', 'safety_identifier']);
  });

  it('chat completions: stream: true is stream_not_supported pointing to POST /v1/responses, before stream_options is read', () => {
    for (const body of [{ stream: true }, { stream_options: { include_usage: true }, stream: true }, { stream: 'yes' }]) {
      const err = refusal(() => chat(body));
      assert.deepEqual([err.code, err.param, err.spec.status], ['stream_not_supported', 'stream', 400], JSON.stringify(body));
      assert.match(err.message, /`POST \/v1\/responses` with `stream: true`/);
    }
    // Through the schema alone (the MCP tool's path) the message is the same.
    const err = refusal(() => parseRequest(formBRequests.completion, { ...BASE, stream: true }));
    assert.deepEqual([err.code, err.param], ['stream_not_supported', 'stream']);
    assert.match(err.message, /`POST \/v1\/responses` with `stream: true`/);
  });

  it('a JSON Schema as zod 4 writes it ($schema 2020-12, or draft-07) is taken on both endpoints; an unknown $schema is refused naming it', () => {
    const City = z.object({ city: z.string(), population: z.number().int().nonnegative(), capital: z.boolean() });
    for (const schema of [z.toJSONSchema(City), z.toJSONSchema(City, { target: 'draft-7' })]) {
      const viaChat = chat({ response_format: { type: 'json_schema', json_schema: { name: 'city', schema, strict: true } } });
      assert.deepEqual(viaChat.options?.answer?.format, { type: 'json_schema', name: 'city', schema, strict: true });
      const viaResponse = response({ text: { format: { type: 'json_schema', name: 'city', schema, strict: true } } });
      assert.deepEqual(viaResponse.completion.options?.answer?.format, { type: 'json_schema', name: 'city', schema, strict: true });
    }
    const schema = { $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' };
    const viaChat = refusal(() => chat({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } }));
    assert.deepEqual([viaChat.code, viaChat.param], ['invalid_request', 'response_format']);
    assert.ok(viaChat.message.includes('`response_format.json_schema.schema`'), viaChat.message);
    assert.ok(viaChat.message.includes('"http://json-schema.org/draft-04/schema#" is not a dialect Quorum checks'), viaChat.message);
    const viaResponse = refusal(() => response({ text: { format: { type: 'json_schema', name: 'x', schema } } }));
    assert.deepEqual([viaResponse.code, viaResponse.param], ['invalid_request', 'text.format']);
    assert.ok(viaResponse.message.includes('`text.format.schema`: is not a JSON Schema Quorum can check'), viaResponse.message);
  });

  it("/openapi.json's response request takes exactly the no-op values and refuses the rest", () => {
    const doc = responseRequestDoc('B');
    for (const [param, { noop, refused }] of Object.entries(RESPONSES_CASES)) {
      for (const value of [...noop, null])
        assert.ok(doc.safeParse({ model: BASE.model, input: 'Hi', [param]: value }).success, `${param}: ${JSON.stringify(value)}`);
      for (const value of refused)
        assert.equal(
          doc.safeParse({ model: BASE.model, input: 'Hi', [param]: value }).success,
          false,
          `${param}: ${JSON.stringify(value)}`,
        );
    }
    assert.ok(doc.safeParse({ model: BASE.model, input: 'Hi', safety_identifier: 'u' }).success);
  });
});

/** The installed `openai` package's keys of one request interface. */
function declaredKeys(file: string, name: string): string[] {
  const text = fs.readFileSync(path.join(path.dirname(require.resolve('openai')), file), 'utf8');
  const body = new RegExp(`export interface ${name} \\{([\\s\\S]*?)\\n\\}`).exec(text)?.[1] ?? '';
  return [...body.matchAll(/^ {4}([a-z_]+)\??:/gm)].map((m) => m[1] ?? '');
}

describe('the parameter table of docs/api-extensions.md, the code and the openai package agree (issue 53 item 2)', () => {
  /** Quorum's own keys, documented beside the table. */
  const OWN = ['tier', 'svc'];
  const chatHonoured = formBRequests.completionKeys.filter((k) => !OWN.includes(k));
  const responsesHonoured = RESPONSES_HONOURED.filter((k) => !OWN.includes(k));
  const chatKeys = [...chatHonoured, ...Object.keys(CHAT_UNHONOURED)];
  const responsesKeys = [...responsesHonoured, ...Object.keys(RESPONSES_UNHONOURED)];

  /** The table's rows: parameter → its cells (chat completions, responses, why). */
  const rows = ((): Map<string, string[]> => {
    const text = fs.readFileSync(path.join(__dirname, '..', '..', '..', 'docs', 'api-extensions.md'), 'utf8');
    const table = /<!-- openai-parameters:[^\n]*-->\n([\s\S]*?)\n<!-- \/openai-parameters -->/.exec(text)?.[1] ?? '';
    const out = new Map<string, string[]>();
    for (const line of table.split('\n').slice(2)) {
      const cells = line.split(' | ').map((c) => c.replace(/^\| ?| ?\|$/g, ''));
      out.set((cells[0] ?? '').replace(/`/g, ''), cells.slice(1));
    }
    return out;
  })();

  it('the code classifies every request parameter of ChatCompletionCreateParamsBase and ResponseCreateParamsBase', () => {
    const chat = declaredKeys('resources/chat/completions/completions.d.ts', 'ChatCompletionCreateParamsBase');
    const responses = declaredKeys('resources/responses/responses.d.ts', 'ResponseCreateParamsBase');
    assert.ok(chat.length > 30 && responses.length > 25, `${chat.length} / ${responses.length}: the package's declarations moved`);
    assert.deepEqual(
      chat.filter((k) => !chatKeys.includes(k)),
      [],
    );
    assert.deepEqual(
      responses.filter((k) => !responsesKeys.includes(k)),
      [],
    );
    // Neither names a parameter twice (honoured and not).
    assert.equal(new Set(chatKeys).size, chatKeys.length);
    assert.equal(new Set(responsesKeys).size, responsesKeys.length);
  });

  it('the table has one row per parameter of either endpoint, each cell as the code does it', () => {
    const all = [...new Set([...chatKeys, ...responsesKeys])].sort();
    assert.deepEqual([...rows.keys()], all);
    const cell = (honoured: readonly string[], table: Readonly<Record<string, Unhonoured>>, key: string): string | RegExp => {
      if (honoured.includes(key)) return /^Honoured\b/;
      const rule = table[key];
      if (!rule) return '—';
      return rule.noop ? `No-op at ${rule.noop.values}; else \`unsupported_parameter\`` : 'Refused: `unsupported_parameter`';
    };
    for (const key of all) {
      const [chat, responses, why] = rows.get(key) ?? [];
      const a = CHAT_UNHONOURED[key]?.why;
      const b = RESPONSES_UNHONOURED[key]?.why;
      const expected = [
        cell(chatHonoured, CHAT_UNHONOURED, key),
        cell(responsesHonoured, RESPONSES_UNHONOURED, key),
        a && b && a !== b ? `${a} (chat completions); ${b} (responses)` : (a ?? b ?? ''),
      ];
      for (const [i, got] of [chat, responses, why].entries()) {
        const want = expected[i];
        if (want instanceof RegExp) assert.match(got ?? '', want, `${key}, column ${i + 1}`);
        else assert.equal(got, want, `${key}, column ${i + 1}`);
      }
    }
  });
});
