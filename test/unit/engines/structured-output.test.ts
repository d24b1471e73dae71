import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createEngines, type EngineRequest, type Engines } from '../../../engines';
import { geminiSchema } from '../../../engines/adapters/google';
import { parseJudgment } from '../../../domain/judge-reply';
import { judgmentSchema, runVerdictSchema } from '../../../domain/reply-schemas';
import {
  ANTHROPIC_TEST_KEY,
  AWS_TEST_CREDENTIALS,
  GOOGLE_TEST_KEY,
  OPENAI_TEST_KEY,
  openAiReply,
  startAnthropicLoopback,
  startBedrockLoopback,
  startGoogleLoopback,
  startOpenAiLoopback,
  type Loopback,
  type RecordedRequest,
} from '../../fixtures/providers';
import { captureLogger, MESSAGES } from './helpers';
import { settingsOf } from '../../harness/settings';

const LABELS = ['A', 'B', 'C'];
const VERDICT = {
  scores: { A: 3, B: 9, C: 5 },
  best: 'B',
  converged: false,
  divergence: 0.4,
  factual_conflict: false,
  contested: null,
  why: 'B cites the date.',
};
const schema = judgmentSchema(LABELS);

/** An engines file declaring one keyless OpenAI-compatible engine at `baseUrl`. */
function enginesFile(baseUrl: string, extra: Record<string, unknown> = {}): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-engines-'));
  const file = path.join(dir, 'engines.json');
  const entry = {
    id: 'local/judge',
    protocol: 'openai',
    base_url: baseUrl,
    api_key_env: 'LOCAL_JUDGE_KEY',
    model: 'small',
    tier: 'experience',
    input_usd_per_mtok: 0,
    output_usd_per_mtok: 0,
    context_tokens: 4096,
    max_output_tokens: 1024,
    backup: 'openai/gpt-4.1-mini',
    ...extra,
  };
  fs.writeFileSync(file, JSON.stringify({ engines: [entry] }));
  return file;
}

describe('engines: staff replies asked for in structure, each protocol its own way', () => {
  const servers: Loopback[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });
  const track = (s: Loopback): Loopback => (servers.push(s), s);
  const ask = (e: Engines, engineId: string, extra: Partial<EngineRequest> = {}): ReturnType<Engines['call']> =>
    e.call({ engineId, messages: MESSAGES, maxOutputTokens: 300, reply: schema, ...extra });
  const bodyOf = (s: Loopback): Record<string, unknown> => (s.requests[0] as RecordedRequest).body as Record<string, unknown>;

  it("OpenAI: a strict json_schema response_format, without the maxLength OpenAI's strict mode refuses", async () => {
    const s = track(await startOpenAiLoopback(openAiReply({ text: JSON.stringify(VERDICT) })));
    const e = createEngines({ ...settingsOf({ QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY, QUORUM_OPENAI_BASE_URL: s.baseUrl }) });
    const r = await ask(e, 'openai/gpt-4.1');
    const format = bodyOf(s).response_format as { type: string; json_schema: { name: string; strict: boolean; schema: unknown } };
    assert.deepEqual([format.type, format.json_schema.name, format.json_schema.strict], ['json_schema', 'judgment', true]);
    const sent = JSON.stringify(format.json_schema.schema);
    assert.ok(!sent.includes('maxLength'), sent);
    assert.equal(sent, JSON.stringify(schema.schema).replace(/,"maxLength":\d+/g, ''));
    assert.deepEqual(parseJudgment(r.text, LABELS)?.scores, VERDICT.scores);
  });

  it('an OpenAI-compatible server of another maker gets the schema whole (its grammar enforces maxLength) and both limit fields', async () => {
    const s = track(await startOpenAiLoopback(openAiReply({ text: JSON.stringify(VERDICT), completionTokens: 30 })));
    const e = createEngines({ ...settingsOf({ QUORUM_ENGINES_FILE: enginesFile(s.baseUrl), LOCAL_JUDGE_KEY: OPENAI_TEST_KEY }) });
    await ask(e, 'local/judge');
    const body = bodyOf(s);
    assert.deepEqual((body.response_format as { json_schema: { schema: unknown } }).json_schema.schema, schema.schema);
    assert.deepEqual([body.max_tokens, body.max_completion_tokens], [300, 300]);
  });

  it('an engine declared without structured output is asked in text only', async () => {
    const s = track(await startOpenAiLoopback(openAiReply({ text: JSON.stringify(VERDICT) })));
    const e = createEngines({
      ...settingsOf({ QUORUM_ENGINES_FILE: enginesFile(s.baseUrl, { structured_output: false }), LOCAL_JUDGE_KEY: OPENAI_TEST_KEY }),
    });
    const r = await ask(e, 'local/judge');
    assert.equal(bodyOf(s).response_format, undefined);
    assert.equal(parseJudgment(r.text, LABELS)?.best, 'B');
  });

  it('Anthropic: a forced call of one tool whose input is the verdict', async () => {
    const s = track(
      await startAnthropicLoopback({
        json: {
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          model: 'claude-sonnet-4-20250514',
          content: [{ type: 'tool_use', id: 'toolu_1', name: 'judgment', input: VERDICT }],
          stop_reason: 'tool_use',
          stop_sequence: null,
          usage: { input_tokens: 40, output_tokens: 30 },
        },
      }),
    );
    const e = createEngines({ ...settingsOf({ QUORUM_ANTHROPIC_API_KEY: ANTHROPIC_TEST_KEY, QUORUM_ANTHROPIC_BASE_URL: s.baseUrl }) });
    const r = await ask(e, 'anthropic/claude-sonnet-4');
    const body = bodyOf(s);
    assert.deepEqual(body.tools, [{ name: 'judgment', input_schema: schema.schema }]);
    assert.deepEqual(body.tool_choice, { type: 'tool', name: 'judgment' });
    assert.equal(r.finish, 'stop');
    assert.equal(parseJudgment(r.text, LABELS)?.best, 'B');
  });

  it('Gemini: responseMimeType and a responseSchema in its OpenAPI subset', async () => {
    const s = track(
      await startGoogleLoopback({
        json: {
          candidates: [{ content: { role: 'model', parts: [{ text: JSON.stringify(VERDICT) }] }, finishReason: 'STOP' }],
          usageMetadata: { promptTokenCount: 40, candidatesTokenCount: 30 },
        },
      }),
    );
    const e = createEngines({ ...settingsOf({ QUORUM_GOOGLE_API_KEY: GOOGLE_TEST_KEY, QUORUM_GOOGLE_BASE_URL: s.baseUrl }) });
    const r = await ask(e, 'google/gemini-2.5-flash');
    const config = bodyOf(s).generationConfig as Record<string, unknown>;
    assert.equal(config.responseMimeType, 'application/json');
    const sent = JSON.stringify(config.responseSchema);
    assert.ok(!sent.includes('additionalProperties'), sent);
    assert.ok(!sent.includes('"null"'), sent);
    assert.equal(parseJudgment(r.text, LABELS)?.best, 'B');
  });

  it('Gemini: a nullable anyOf becomes the object, nullable', () => {
    const contested = (geminiSchema(schema.schema).properties as Record<string, Record<string, unknown>>).contested;
    assert.equal(contested?.nullable, true);
    assert.equal(contested?.type, 'object');
    assert.deepEqual(contested?.required, ['label', 'quote', 'why']);
  });

  it('Gemini: JSON Schema keywords (zod 4 and pydantic) are written out of the schema: `$schema` dropped, a local `$ref` inlined', () => {
    const zodLike = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { home: { $ref: '#/$defs/City' }, visited: { type: 'array', items: { $ref: '#/definitions/City' } } },
      required: ['home'],
      additionalProperties: false,
      $defs: { City: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'], additionalProperties: false } },
      definitions: { City: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } },
    };
    const city = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] };
    assert.deepEqual(geminiSchema(zodLike), {
      type: 'object',
      properties: { home: city, visited: { type: 'array', items: city } },
      required: ['home'],
    });
    // A recursive schema is written out to a fixed depth, its deeper levels any value.
    const tree = { $defs: { Node: { type: 'object', properties: { child: { $ref: '#/$defs/Node' } } } }, $ref: '#/$defs/Node' };
    assert.ok(JSON.stringify(geminiSchema(tree)).length < 2_000);
    assert.ok(!JSON.stringify(geminiSchema(tree)).includes('$ref'));
  });

  it('Bedrock Converse: a tool whose input schema is the reply, its toolUse input read back', async () => {
    const s = track(
      await startBedrockLoopback(
        {
          json: {
            output: {
              message: {
                role: 'assistant',
                content: [{ toolUse: { toolUseId: 't1', name: 'verdict', input: { winner: 'A', why: 'x' } } }],
              },
            },
            stopReason: 'tool_use',
            usage: { inputTokens: 30, outputTokens: 10, totalTokens: 40 },
            metrics: { latencyMs: 5 },
          },
        },
        { ...AWS_TEST_CREDENTIALS, region: 'us-east-1' },
      ),
    );
    const e = createEngines({
      ...settingsOf({
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: AWS_TEST_CREDENTIALS.accessKeyId,
        AWS_SECRET_ACCESS_KEY: AWS_TEST_CREDENTIALS.secretAccessKey,
        QUORUM_BEDROCK_ENDPOINT: s.baseUrl,
      }),
    });
    const verdict = runVerdictSchema(['A', 'B']);
    const r = await ask(e, 'bedrock/meta.llama3-3-70b-instruct', { reply: verdict });
    // Converse forces a named tool only for Anthropic's models; a Llama is offered it.
    assert.deepEqual(bodyOf(s).toolConfig, { tools: [{ toolSpec: { name: 'verdict', inputSchema: { json: verdict.schema } } }] });
    assert.deepEqual(JSON.parse(r.text), { winner: 'A', why: 'x' });
  });

  it('without a schema none is asked, and the text parser still reads prose-wrapped JSON', async () => {
    const s = track(await startOpenAiLoopback(openAiReply({ text: `Here you go:\n\`\`\`json\n${JSON.stringify(VERDICT)}\n\`\`\`` })));
    const e = createEngines({ ...settingsOf({ QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY, QUORUM_OPENAI_BASE_URL: s.baseUrl }) });
    const r = await ask(e, 'openai/gpt-4.1', { reply: undefined });
    assert.equal(bodyOf(s).response_format, undefined);
    assert.equal(parseJudgment(r.text, LABELS)?.best, 'B');
  });
});

describe('engines: output limits sent in the form the endpoint honours, overruns reported', () => {
  let server: Loopback | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it("OpenAI's own reasoning model gets max_completion_tokens only, its other models max_tokens only", async () => {
    server = await startOpenAiLoopback([openAiReply({ completionTokens: 5 }), openAiReply({ completionTokens: 5 })]);
    const e = createEngines({ ...settingsOf({ QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY, QUORUM_OPENAI_BASE_URL: server.baseUrl }) });
    await e.call({ engineId: 'openai/gpt-5', messages: MESSAGES, maxOutputTokens: 16 });
    await e.call({ engineId: 'openai/gpt-4.1', messages: MESSAGES, maxOutputTokens: 16 });
    const [reasoning, plain] = server.requests.map((r) => r.body as Record<string, unknown>);
    assert.equal(reasoning?.max_completion_tokens, 16);
    assert.equal(reasoning?.max_tokens, undefined);
    assert.equal(plain?.max_tokens, 16);
    assert.equal(plain?.max_completion_tokens, undefined);
  });

  it('a reply longer than its limit is billed as served, flagged and logged', async () => {
    server = await startOpenAiLoopback(openAiReply({ text: 'word '.repeat(546), completionTokens: 546, finish: 'stop' }));
    const { logger, lines } = captureLogger();
    const e = createEngines({ ...settingsOf({ QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY, QUORUM_OPENAI_BASE_URL: server.baseUrl }), logger });
    const r = await e.call({ engineId: 'openai/gpt-4.1', messages: MESSAGES, maxOutputTokens: 16 });
    assert.equal(r.tokensOut, 546);
    assert.equal(r.overLimit, true);
    const warning = lines.find((l) => l.includes('longer than its output limit'));
    assert.ok(warning, lines.join('\n'));
    assert.match(warning, /"limit":16/);
    assert.match(warning, /"tokensOut":546/);
  });

  it('a reply within its limit is not flagged', async () => {
    server = await startOpenAiLoopback(openAiReply({ completionTokens: 16, finish: 'length' }));
    const e = createEngines({ ...settingsOf({ QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY, QUORUM_OPENAI_BASE_URL: server.baseUrl }) });
    const r = await e.call({ engineId: 'openai/gpt-4.1', messages: MESSAGES, maxOutputTokens: 16 });
    assert.equal(r.overLimit, false);
    assert.equal(r.finish, 'length');
  });
});
