import assert from 'node:assert/strict';
import { createEngines, type EngineRequest } from '../../../engines';
import { answerFormatProblem, schemaProblem } from '../../../domain/answer-format-check';
import { replySchemaOf, type AnswerFormat } from '../../../domain/answer-options';
import type { JsonSchema } from '../../../domain/reply-schemas';
import {
  ANTHROPIC_TEST_KEY,
  AWS_TEST_CREDENTIALS,
  GOOGLE_TEST_KEY,
  OPENAI_TEST_KEY,
  anthropicReply,
  openAiReply,
  startAnthropicLoopback,
  startBedrockLoopback,
  startGoogleLoopback,
  startOpenAiLoopback,
  type Loopback,
  type RecordedRequest,
} from '../../fixtures/providers';
import { MESSAGES } from './helpers';
import { settingsOf } from '../../harness/settings';

/**
 * Issue 40 item 4 at the engine layer: a caller's structure (`json_object`, a `json_schema` as the caller set
 * `strict`) and sampling (`top_p`, `stop`) in each protocol's own fields; a `sim` engine's structured answer is valid
 * against the caller's schema; the validator that decides whether an answer meets a format.
 */
const JSON_OBJECT = replySchemaOf({ type: 'json_object' });
const SAMPLING: Partial<EngineRequest> = { temperature: 0.3, topP: 0.5, seed: 7, stop: ['END'] };

describe("engines: a caller's structure and sampling, each protocol its own way", () => {
  const servers: Loopback[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });
  const bodyOf = (s: Loopback): Record<string, unknown> => (s.requests[0] as RecordedRequest).body as Record<string, unknown>;
  const req = (engineId: string, extra: Partial<EngineRequest>): EngineRequest => ({
    engineId,
    messages: MESSAGES,
    maxOutputTokens: 100,
    ...extra,
  });

  it('OpenAI: json_object as OpenAI names it, a caller’s non-strict schema kept non-strict, top_p and stop sent', async () => {
    const s = await startOpenAiLoopback(openAiReply({ text: '{"a": 1}' }));
    servers.push(s);
    const e = createEngines({ ...settingsOf({ QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY, QUORUM_OPENAI_BASE_URL: s.baseUrl }) });
    await e.call(req('openai/gpt-4.1', { reply: JSON_OBJECT, ...SAMPLING }));
    const loose: AnswerFormat = { type: 'json_schema', name: 'x', schema: { type: 'object' }, strict: false };
    await e.call(req('openai/gpt-4.1', { reply: replySchemaOf(loose) }));
    // A reasoning model refuses temperature, top_p and stop: it gets the seed alone.
    await e.call(req('openai/gpt-5', SAMPLING));
    const [one, two, three] = s.requests.map((r) => r.body as Record<string, unknown>);
    assert.deepEqual(one?.response_format, { type: 'json_object' });
    assert.deepEqual([one?.temperature, one?.top_p, one?.seed, one?.stop], [0.3, 0.5, 7, ['END']]);
    assert.deepEqual(two?.response_format, { type: 'json_schema', json_schema: { name: 'x', strict: false, schema: { type: 'object' } } });
    assert.deepEqual([three?.temperature, three?.top_p, three?.stop, three?.seed], [undefined, undefined, undefined, 7]);
  });

  it('Anthropic: an object tool for json_object; top_p and stop_sequences', async () => {
    const s = await startAnthropicLoopback(anthropicReply({ text: '{"a": 1}' }));
    servers.push(s);
    const e = createEngines({ ...settingsOf({ QUORUM_ANTHROPIC_API_KEY: ANTHROPIC_TEST_KEY, QUORUM_ANTHROPIC_BASE_URL: s.baseUrl }) });
    await e.call(req('anthropic/claude-sonnet-4', { reply: JSON_OBJECT, ...SAMPLING }));
    const body = bodyOf(s);
    assert.deepEqual(body.tools, [{ name: 'answer', input_schema: { type: 'object' } }]);
    assert.deepEqual([body.temperature, body.top_p, body.stop_sequences, body.seed], [0.3, 0.5, ['END'], undefined]);
  });

  it('Gemini: JSON without a schema for json_object; topP, seed and stopSequences', async () => {
    const s = await startGoogleLoopback({
      json: {
        candidates: [{ content: { role: 'model', parts: [{ text: '{"a": 1}' }] }, finishReason: 'STOP' }],
        usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5 },
      },
    });
    servers.push(s);
    const e = createEngines({ ...settingsOf({ QUORUM_GOOGLE_API_KEY: GOOGLE_TEST_KEY, QUORUM_GOOGLE_BASE_URL: s.baseUrl }) });
    await e.call(req('google/gemini-2.5-flash', { reply: JSON_OBJECT, ...SAMPLING }));
    const config = bodyOf(s).generationConfig as Record<string, unknown>;
    assert.equal(config.responseMimeType, 'application/json');
    assert.equal('responseSchema' in config, false);
    assert.deepEqual([config.temperature, config.topP, config.seed, config.stopSequences], [0.3, 0.5, 7, ['END']]);
  });

  it('Bedrock Converse: topP and stopSequences in inferenceConfig', async () => {
    const s = await startBedrockLoopback(
      {
        json: {
          output: { message: { role: 'assistant', content: [{ text: 'Paris' }] } },
          stopReason: 'end_turn',
          usage: { inputTokens: 10, outputTokens: 2, totalTokens: 12 },
          metrics: { latencyMs: 5 },
        },
      },
      { ...AWS_TEST_CREDENTIALS, region: 'us-east-1' },
    );
    servers.push(s);
    const e = createEngines({
      ...settingsOf({
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: AWS_TEST_CREDENTIALS.accessKeyId,
        AWS_SECRET_ACCESS_KEY: AWS_TEST_CREDENTIALS.secretAccessKey,
        QUORUM_BEDROCK_ENDPOINT: s.baseUrl,
      }),
    });
    await e.call(req('bedrock/meta.llama3-3-70b-instruct', SAMPLING));
    assert.deepEqual(bodyOf(s).inferenceConfig, { maxTokens: 100, temperature: 0.3, topP: 0.5, stopSequences: ['END'] });
  });
});

describe("sim engines: a caller's structure answered as an enforcing server would", () => {
  const engines = createEngines({ ...settingsOf({}), simLatency: 'zero' });
  const SCHEMAS: Record<string, JsonSchema> = {
    flat: {
      type: 'object',
      properties: { city: { type: 'string', maxLength: 12 }, population: { type: 'integer', minimum: 1, maximum: 9 } },
      required: ['city', 'population'],
      additionalProperties: false,
    },
    nested: {
      type: 'object',
      $defs: { item: { type: 'object', properties: { kind: { enum: ['a', 'b'] }, ok: { type: 'boolean' } }, required: ['kind', 'ok'] } },
      properties: {
        items: { type: 'array', items: { $ref: '#/$defs/item' }, minItems: 2, maxItems: 4 },
        note: { anyOf: [{ type: 'null' }, { type: 'string', minLength: 3 }] },
        score: { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 },
        fixed: { const: 'v1' },
      },
      required: ['items', 'note', 'score', 'fixed'],
    },
    array: { type: 'array', items: { type: 'string' }, minItems: 1 },
  };

  for (const [name, schema] of Object.entries(SCHEMAS)) {
    it(`${name}: the answer validates, and the same call gives the same answer`, async () => {
      const format: AnswerFormat = { type: 'json_schema', name, schema, strict: true };
      const call = (): ReturnType<typeof engines.call> =>
        engines.call({ engineId: 'sim/alpha-plus', messages: MESSAGES, maxOutputTokens: 800, reply: replySchemaOf(format) });
      const a = await call();
      assert.equal(answerFormatProblem(a.text, format), undefined, a.text);
      assert.equal((await call()).text, a.text);
    });
  }

  it('json_object: an object', async () => {
    const r = await engines.call({ engineId: 'sim/alpha-plus', messages: MESSAGES, maxOutputTokens: 800, reply: JSON_OBJECT });
    assert.equal(answerFormatProblem(r.text, { type: 'json_object' }), undefined, r.text);
  });

  it('a schema past the bounds gives an invalid answer, never a huge one', async () => {
    const format: AnswerFormat = { type: 'json_schema', name: 'big', schema: { type: 'array', minItems: 1e9 }, strict: true };
    const r = await engines.call({ engineId: 'sim/alpha-plus', messages: MESSAGES, maxOutputTokens: 2000, reply: replySchemaOf(format) });
    assert.match(answerFormatProblem(r.text, format) ?? '', /not JSON|does not validate/);
  });

  it('stop: the text ends before the first stop sequence', async () => {
    const full = await engines.call({ engineId: 'sim/alpha-plus', messages: MESSAGES, maxOutputTokens: 800 });
    const word = full.text.split(' ')[3] ?? '';
    const cut = await engines.call({ engineId: 'sim/alpha-plus', messages: MESSAGES, maxOutputTokens: 800, stop: [word, 'zzz-never'] });
    assert.equal(cut.text, full.text.slice(0, full.text.indexOf(word)));
  });
});

describe('answer formats: what meets one', () => {
  const CITY: AnswerFormat = {
    type: 'json_schema',
    name: 'city',
    schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
    strict: true,
  };
  it('valid JSON against the schema passes; prose, a fenced block, a wrong shape do not, each saying why', () => {
    assert.equal(answerFormatProblem('{"city": "Paris"}', CITY), undefined);
    assert.equal(answerFormatProblem('Paris', CITY), 'the answer is not JSON');
    assert.equal(answerFormatProblem('```json\n{"city": "Paris"}\n```', CITY), 'the answer is not JSON');
    assert.match(answerFormatProblem('{"city": 3}', CITY) ?? '', /\/city must be string/);
    assert.match(answerFormatProblem('{"city": "Paris", "x": 1}', CITY) ?? '', /additional properties/);
    assert.equal(answerFormatProblem('[1]', { type: 'json_object' }), 'the answer is not a JSON object');
  });
  it('a schema that cannot compile, or names another document, is a problem before anything runs', () => {
    assert.equal(schemaProblem(CITY.type === 'json_schema' ? CITY.schema : {}), undefined);
    assert.ok(schemaProblem({ type: 'no-such-type' }));
    assert.ok(schemaProblem({ $ref: 'https://example.com/schema.json' }));
  });
});
