import assert from 'node:assert/strict';
import { createEngines, type EngineRequest, type EngineResult, type Engines } from '../../../engines';
import { countMessagesTokens, countTokens } from '../../../domain/tokens';
import {
  ANTHROPIC_TEST_KEY,
  anthropicReply,
  anthropicStreamError,
  AWS_TEST_CREDENTIALS,
  bedrockReply,
  OPENAI_TEST_KEY,
  openAiReply,
  sse,
  startAnthropicLoopback,
  startBedrockLoopback,
  startOpenAiLoopback,
  type Loopback,
  type RecordedRequest,
  type Script,
} from '../../fixtures/providers';
import { API_KEY_PROTOCOLS, captureLogger, engineFailure, loopbackEngines, MESSAGES, type ApiKeyProtocol } from './helpers';
import { settingsOf } from '../../harness/settings';

/** What differs between the three streaming protocols; the behaviour under test is the same. */
interface Protocol extends ApiKeyProtocol {
  /** Whether the request asked for a streamed reply, the protocol's own way. */
  askedStream(req: RecordedRequest): boolean;
  /** The last turn as sent: its role in the protocol's words and its text. */
  lastTurn(req: RecordedRequest): { role: string; text: string };
  /** The final assistant turn's role in the protocol's words. */
  assistant: string;
  /** Whether the text to continue is sent without its trailing whitespace. */
  trims: boolean;
}

type Body = Record<string, unknown>;
const bodyOf = (req: RecordedRequest): Body => req.body as Body;
const lastOf = <T>(items: unknown): T => (items as T[])[(items as T[]).length - 1] as T;

const PROTOCOLS: readonly Protocol[] = [
  {
    ...API_KEY_PROTOCOLS.openai,
    askedStream: (req) => {
      const body = bodyOf(req);
      return body.stream === true && (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
    },
    lastTurn: (req) => {
      const m = lastOf<{ role: string; content: string }>(bodyOf(req).messages);
      return { role: m.role, text: m.content };
    },
    assistant: 'assistant',
    trims: false,
  },
  {
    ...API_KEY_PROTOCOLS.anthropic,
    askedStream: (req) => bodyOf(req).stream === true,
    lastTurn: (req) => {
      const m = lastOf<{ role: string; content: string }>(bodyOf(req).messages);
      return { role: m.role, text: m.content };
    },
    assistant: 'assistant',
    trims: true,
  },
  {
    ...API_KEY_PROTOCOLS.google,
    askedStream: (req) => req.path.endsWith(':streamGenerateContent') && req.query.get('alt') === 'sse',
    lastTurn: (req) => {
      const m = lastOf<{ role: string; parts: { text: string }[] }>(bodyOf(req).contents);
      return { role: m.role, text: m.parts.map((p) => p.text).join('') };
    },
    assistant: 'model',
    trims: false,
  },
];

const ANSWER = 'The capital of France is Paris, on the Seine.';

/** A call with `onText`, each piece kept with the time it came. */
async function streamed(
  e: Engines,
  req: Omit<EngineRequest, 'onText'>,
): Promise<{ result: EngineResult; deltas: string[]; at: number[]; endedAt: number }> {
  const deltas: string[] = [];
  const at: number[] = [];
  const result = await e.call({
    ...req,
    onText: (d) => {
      deltas.push(d);
      at.push(performance.now());
    },
  });
  return { result, deltas, at, endedAt: performance.now() };
}

for (const p of PROTOCOLS) {
  describe(`engines: ${p.family} streams the answer as the provider writes it`, () => {
    let server: Loopback | undefined;

    async function engines(script: Script): Promise<{ engines: Engines; server: Loopback }> {
      const started = await loopbackEngines(p, script);
      server = started.server;
      return started;
    }
    const request = (extra: Partial<EngineRequest> = {}): EngineRequest => ({
      engineId: p.engineId,
      messages: MESSAGES,
      maxOutputTokens: 100,
      temperature: 0.2,
      ...extra,
    });
    /** A failed streamed call: the error and the pieces that came before it. */
    async function failed(
      e: Engines,
      extra: Partial<EngineRequest> = {},
    ): Promise<{ err: Awaited<ReturnType<typeof engineFailure>>; deltas: string[] }> {
      const deltas: string[] = [];
      const err = await engineFailure(e.call(request({ ...extra, onText: (d) => deltas.push(d) })));
      return { err, deltas };
    }

    afterEach(async () => {
      await server?.close();
      server = undefined;
    });

    it('hands on the pieces in order as they arrive; they join to the text; tokens and finish as reported', async () => {
      const { engines: e, server: s } = await engines({ ...p.ok({ text: ANSWER, tokensIn: 21, tokensOut: 11 }), eventGapMs: 25 });
      const { result, deltas, at, endedAt } = await streamed(e, request());
      assert.deepEqual(s.rejected, []);
      assert.ok(p.askedStream(s.requests[0] as RecordedRequest), 'the request asked for a stream');
      assert.ok(deltas.length >= 5, `several pieces, got ${JSON.stringify(deltas)}`);
      assert.equal(deltas.join(''), ANSWER);
      assert.equal(result.text, ANSWER);
      assert.equal(result.finish, 'stop');
      assert.deepEqual([result.tokensIn, result.tokensOut], [21, 11]);
      // Streamed, not buffered: the first piece came well before the reply ended.
      assert.ok((at[0] ?? endedAt) < endedAt - 100, `first piece ${Math.round(endedAt - (at[0] ?? endedAt))} ms before the end`);
    });

    it('a reply cut at its limit is finish length', async () => {
      const { engines: e } = await engines(p.ok({ text: 'The capital of', truncated: true, tokensIn: 21, tokensOut: 100 }));
      const { result, deltas } = await streamed(e, request());
      assert.equal(result.finish, 'length');
      assert.equal(deltas.join(''), 'The capital of');
    });

    it('without onText the request is the one JSON call of today: no stream asked', async () => {
      const { engines: e, server: s } = await engines(p.ok({ text: ANSWER, tokensIn: 21, tokensOut: 11 }));
      const result = await e.call(request());
      const req = s.requests[0] as RecordedRequest;
      assert.equal(p.askedStream(req), false);
      assert.equal(bodyOf(req).stream, undefined);
      assert.equal(bodyOf(req).stream_options, undefined);
      assert.doesNotMatch(req.path, /stream/i);
      assert.equal(result.text, ANSWER);
    });

    for (const stream of [true, false]) {
      it(`continueFrom is sent as the last assistant turn and only the new text comes back (${stream ? 'streamed' : 'one reply'})`, async () => {
        const earlier = 'The capital of France is ';
        // Continuing a turn sent without its trailing space, the engine writes that space itself.
        const { engines: e, server: s } = await engines(p.ok({ text: p.trims ? ' Paris.' : 'Paris.', tokensIn: 30, tokensOut: 2 }));
        const deltas: string[] = [];
        const result = await e.call(request({ continueFrom: earlier, ...(stream ? { onText: (d: string) => deltas.push(d) } : {}) }));
        assert.deepEqual(s.rejected, []);
        assert.deepEqual(p.lastTurn(s.requests[0] as RecordedRequest), { role: p.assistant, text: p.trims ? earlier.trimEnd() : earlier });
        assert.equal(result.text, 'Paris.');
        assert.equal(earlier + result.text, 'The capital of France is Paris.');
        if (stream) assert.equal(deltas.join(''), 'Paris.');
      });
    }

    it('a stream broken midway is a retryable connection failure, the pieces before it kept, no secret in it', async () => {
      const { engines: e } = await engines({ ...p.ok({ text: ANSWER, tokensIn: 21, tokensOut: 11 }), breakAfter: 4 });
      const { err, deltas } = await failed(e);
      assert.equal(err.kind, 'connection');
      assert.equal(err.retryable, true);
      assert.match(err.message, /stream ended before the reply was complete/);
      assert.ok(deltas.length > 0 && ANSWER.startsWith(deltas.join('')), 'what came is the start of the answer');
      assert.match(err.reason, /stream cut off/);
      for (const text of [err.message, err.reason, err.line]) assert.ok(!text.includes(p.key), text);
    });

    it('a stream that ends cleanly before its terminal event is a retryable connection failure', async () => {
      const { engines: e } = await engines({ ...p.ok({ text: ANSWER, tokensIn: 21, tokensOut: 11 }), endAfter: 3 });
      const { err } = await failed(e);
      assert.equal(err.kind, 'connection');
      assert.equal(err.retryable, true);
      assert.match(err.message, /stream ended before the reply was complete/);
    });

    it('an event that is not JSON, or not the protocol’s, is a permanent malformed failure', async () => {
      const { engines: e } = await engines([{ events: [sse('{"half":')] }, { events: [sse({ unexpected: true })] }]);
      for (let i = 0; i < 2; i += 1) {
        const { err } = await failed(e);
        assert.equal(err.kind, 'malformed');
        assert.equal(err.retryable, false);
      }
    });

    it('a 2xx reply that is not an event stream is malformed', async () => {
      const { engines: e } = await engines({ headers: { 'content-type': 'application/json' }, text: '{"not":"a stream"}' });
      const { err } = await failed(e);
      assert.equal(err.kind, 'malformed');
      assert.match(err.message, /not an event stream/);
    });

    it('an error answered before the stream is classified as today (429 with its wait)', async () => {
      const { engines: e } = await engines(p.error(429, 'Rate limit reached, slow down', { 'retry-after': '7' }));
      const { err, deltas } = await failed(e);
      assert.equal(err.kind, 'rate_limited');
      assert.equal(err.retryAfterMs, 7000);
      assert.deepEqual(deltas, []);
    });

    it('a stream stalled past the deadline times out; the caller’s cancellation mid-stream is aborted', async () => {
      const { engines: e } = await engines({ ...p.ok({ text: ANSWER, tokensIn: 21, tokensOut: 11 }), eventGapMs: 120 });
      const late = await failed(e, { timeoutMs: 800 });
      assert.equal(late.err.kind, 'timeout');
      assert.equal(late.err.retryable, true);
      assert.ok(late.deltas.length >= 1, 'pieces came before the deadline');
      const caller = new AbortController();
      setTimeout(() => caller.abort(), 800);
      const cancelled = await failed(e, { signal: caller.signal });
      assert.equal(cancelled.err.kind, 'aborted');
      assert.equal(cancelled.err.retryable, false);
    });
  });
}

describe('engines: streaming, each protocol’s own details', () => {
  const servers: Loopback[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });
  const track = (s: Loopback): Loopback => (servers.push(s), s);

  it('OpenAI-compatible server without usage: the tokenizer counts stand in, as for one reply', async () => {
    const s = track(await startOpenAiLoopback(openAiReply({ text: ANSWER, omitUsage: true })));
    const e = createEngines({
      ...settingsOf({ QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY, QUORUM_OPENAI_BASE_URL: s.baseUrl }),
      logger: captureLogger().logger,
    });
    const req = { engineId: 'openai/gpt-4.1', messages: MESSAGES, maxOutputTokens: 100 };
    const { result } = await streamed(e, req);
    assert.equal(result.text, ANSWER);
    assert.deepEqual([result.tokensIn, result.tokensOut], [countMessagesTokens(MESSAGES), countTokens(ANSWER)]);
    const plain = await e.call(req);
    assert.deepEqual([plain.tokensIn, plain.tokensOut], [result.tokensIn, result.tokensOut]);
  });

  it('OpenAI reasoning tokens come from the usage chunk', async () => {
    const s = track(await startOpenAiLoopback(openAiReply({ text: ANSWER, promptTokens: 9, completionTokens: 40, reasoningTokens: 30 })));
    const e = createEngines({
      ...settingsOf({ QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY, QUORUM_OPENAI_BASE_URL: s.baseUrl }),
      logger: captureLogger().logger,
    });
    const { result } = await streamed(e, { engineId: 'openai/gpt-4.1', messages: MESSAGES, maxOutputTokens: 100 });
    assert.deepEqual([result.tokensIn, result.tokensOut, result.reasoningTokens], [9, 40, 30]);
  });

  describe('Anthropic', () => {
    const engines = (s: Loopback): Engines =>
      createEngines({
        ...settingsOf({ QUORUM_ANTHROPIC_API_KEY: ANTHROPIC_TEST_KEY, QUORUM_ANTHROPIC_BASE_URL: s.baseUrl }),
        logger: captureLogger().logger,
      });
    const req = { engineId: 'anthropic/claude-sonnet-4', messages: MESSAGES, maxOutputTokens: 100 };

    it('an error event mid-stream is classified as its HTTP error: overloaded is retryable, a refused request is not', async () => {
      const ok = anthropicReply({ text: ANSWER, inputTokens: 21, outputTokens: 11 });
      const s = track(
        await startAnthropicLoopback([
          anthropicStreamError(ok, 5, 'overloaded_error', 'Overloaded'),
          anthropicStreamError(ok, 5, 'invalid_request_error', 'Output blocked by content filtering policy'),
        ]),
      );
      const e = engines(s);
      const deltas: string[] = [];
      const overloaded = await engineFailure(e.call({ ...req, onText: (d) => deltas.push(d) }));
      assert.equal(overloaded.kind, 'server');
      assert.equal(overloaded.retryable, true);
      assert.equal(overloaded.status, 529);
      assert.match(overloaded.message, /Overloaded/);
      assert.ok(deltas.length > 0 && ANSWER.startsWith(deltas.join('')));
      const refused = await engineFailure(e.call({ ...req, onText: () => undefined }));
      assert.equal(refused.kind, 'bad_request');
      assert.equal(refused.retryable, false);
    });

    it("a structured reply's tool input streams as its JSON text", async () => {
      const input = { scores: { A: 7.5, B: 9 }, best: 'B', why: 'B is complete.' };
      const s = track(
        await startAnthropicLoopback({
          json: {
            id: 'msg_1',
            type: 'message',
            role: 'assistant',
            model: 'claude-sonnet-4-20250514',
            content: [{ type: 'tool_use', id: 'toolu_1', name: 'judgment', input }],
            stop_reason: 'tool_use',
            stop_sequence: null,
            usage: { input_tokens: 40, output_tokens: 30 },
          },
        }),
      );
      const { result, deltas } = await streamed(engines(s), req);
      assert.ok(deltas.length > 3);
      assert.equal(deltas.join(''), result.text);
      assert.deepEqual(JSON.parse(result.text), input);
      assert.equal(result.finish, 'stop');
    });

    it('a text to continue that is all whitespace sends no assistant turn and the reply’s leading whitespace is dropped', async () => {
      const s = track(await startAnthropicLoopback(anthropicReply({ text: '\n\nParis.' })));
      const { result } = await streamed(engines(s), { ...req, continueFrom: '\n\n' });
      assert.deepEqual(s.rejected, []);
      assert.equal(lastOf<{ role: string }>(bodyOf(s.requests[0] as RecordedRequest).messages).role, 'user');
      assert.equal(result.text, 'Paris.');
    });
  });

  it('Bedrock does not stream: onText gets the whole text once, after the reply', async () => {
    const region = 'us-east-1';
    const s = track(
      await startBedrockLoopback(bedrockReply({ text: ANSWER, inputTokens: 30, outputTokens: 11 }), { ...AWS_TEST_CREDENTIALS, region }),
    );
    const e = createEngines({
      ...settingsOf({
        AWS_REGION: region,
        AWS_ACCESS_KEY_ID: AWS_TEST_CREDENTIALS.accessKeyId,
        AWS_SECRET_ACCESS_KEY: AWS_TEST_CREDENTIALS.secretAccessKey,
        QUORUM_BEDROCK_ENDPOINT: s.baseUrl,
      }),
      logger: captureLogger().logger,
    });
    const { result, deltas } = await streamed(e, {
      engineId: 'bedrock/meta.llama3-3-70b-instruct',
      messages: MESSAGES,
      maxOutputTokens: 100,
    });
    assert.deepEqual(s.rejected, []);
    assert.deepEqual(deltas, [ANSWER]);
    assert.equal(result.text, ANSWER);
  });
});

describe('engines: a sim engine writes its answer over its latency', () => {
  const req = {
    engineId: 'sim/alpha-plus',
    messages: [{ role: 'user' as const, content: 'Why do leaves change colour in autumn?' }],
    maxOutputTokens: 1000,
  };

  it('in word-sized pieces spread over the latency: the same text, tokens and total time as one reply', async () => {
    const e = createEngines({ ...settingsOf({}), simLatency: 'fixed:400', logger: captureLogger().logger });
    const started = performance.now();
    const { result, deltas, at, endedAt } = await streamed(e, req);
    const plain = await e.call(req);
    assert.ok(deltas.length >= 3, `several pieces, got ${deltas.length}`);
    assert.ok(
      deltas.every((d) => d.trim().split(/\s+/).length === 1),
      'each piece one word',
    );
    assert.equal(deltas.join(''), plain.text);
    assert.equal(result.text, plain.text);
    assert.deepEqual([result.tokensIn, result.tokensOut, result.costMicros], [plain.tokensIn, plain.tokensOut, plain.costMicros]);
    const offsets = at.map((t) => t - started);
    assert.ok((offsets[0] ?? 400) < 150, `first piece at ${Math.round(offsets[0] ?? -1)} ms`);
    const middle = offsets[Math.floor(offsets.length / 2)] ?? 0;
    assert.ok(middle > 120 && middle < 320, `the middle piece at ${Math.round(middle)} ms`);
    assert.ok(endedAt - started >= 395, `whole call took ${Math.round(endedAt - started)} ms`);
    assert.ok(result.latencyMs >= 395 && result.latencyMs < 800, `latency ${result.latencyMs}`);
  });

  it("the caller's cancellation stops the pieces; the deadline between them is a timeout", async () => {
    const e = createEngines({ ...settingsOf({}), simLatency: 'fixed:400', logger: captureLogger().logger });
    const deltas: string[] = [];
    const caller = new AbortController();
    setTimeout(() => caller.abort(), 150);
    const cancelled = await engineFailure(e.call({ ...req, signal: caller.signal, onText: (d) => deltas.push(d) }));
    assert.equal(cancelled.kind, 'aborted');
    const whole = (await e.call(req)).text;
    assert.ok(deltas.length >= 1 && deltas.join('').length < whole.length, 'some pieces, not all');
    const late = await engineFailure(e.call({ ...req, timeoutMs: 150, onText: () => undefined }));
    assert.equal(late.kind, 'timeout');
    assert.equal(late.retryable, true);
  });

  it('continues an earlier attempt: the rest of the same answer', async () => {
    const e = createEngines({ ...settingsOf({}), simLatency: 'zero', logger: captureLogger().logger });
    const whole = (await e.call(req)).text;
    const earlier = whole.slice(0, Math.floor(whole.length / 2));
    const { result, deltas } = await streamed(e, { ...req, continueFrom: earlier });
    assert.equal(earlier + result.text, whole);
    assert.equal(deltas.join(''), result.text);
    assert.ok(result.tokensIn > countMessagesTokens(req.messages), 'the earlier text is input');
  });
});
