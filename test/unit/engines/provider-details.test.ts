import assert from 'node:assert/strict';
import { createEngines } from '../../../engines';
import {
  anthropicError,
  GOOGLE_TEST_KEY,
  googleError,
  googleReply,
  OPENAI_TEST_KEY,
  openAiError,
  startAnthropicLoopback,
  startGoogleLoopback,
  startOpenAiLoopback,
  ANTHROPIC_TEST_KEY,
  type Loopback,
  type RecordedRequest,
} from '../../fixtures/providers';
import { captureLogger, engineFailure, MESSAGES } from './helpers';
import { settingsOf } from '../../harness/settings';

describe('engines: provider-specific mappings', () => {
  const servers: Loopback[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });
  const quiet = (): ReturnType<typeof captureLogger>['logger'] => captureLogger().logger;

  it('openai reasoning models get max_completion_tokens, no temperature, and report reasoning tokens', async () => {
    const s = await startOpenAiLoopback({
      json: {
        choices: [{ index: 0, message: { role: 'assistant', content: 'Paris.' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 20, completion_tokens: 90, completion_tokens_details: { reasoning_tokens: 80 } },
      },
    });
    servers.push(s);
    const e = createEngines({
      ...settingsOf({ QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY, QUORUM_OPENAI_BASE_URL: s.baseUrl }),
      logger: quiet(),
    });
    const r = await e.call({ engineId: 'openai/gpt-5', messages: MESSAGES, maxOutputTokens: 500, temperature: 0.2 });
    assert.deepEqual(s.rejected, []);
    assert.deepEqual((s.requests[0] as RecordedRequest).body, { model: 'gpt-5', messages: MESSAGES, max_completion_tokens: 500 });
    assert.deepEqual([r.tokensOut, r.reasoningTokens], [90, 80]);
  });

  it('openai-compatible servers without usage are counted with the tokenizer; retry-after-ms is honoured', async () => {
    const s = await startOpenAiLoopback([
      { json: { choices: [{ message: { role: 'assistant', content: 'Paris is the capital.' }, finish_reason: 'stop' }] } },
      openAiError(429, 'busy', { 'retry-after-ms': '1500' }),
    ]);
    servers.push(s);
    const e = createEngines({
      ...settingsOf({ QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY, QUORUM_OPENAI_BASE_URL: s.baseUrl }),
      logger: quiet(),
    });
    const r = await e.call({ engineId: 'openai/gpt-4.1-mini', messages: MESSAGES, maxOutputTokens: 50 });
    assert.ok(r.tokensIn > 10 && r.tokensOut === 5);
    assert.equal(r.reasoningTokens, null);
    const err = await engineFailure(e.call({ engineId: 'openai/gpt-4.1-mini', messages: MESSAGES, maxOutputTokens: 50 }));
    assert.equal(err.retryAfterMs, 1500);
  });

  it('clamps maxOutputTokens to the engine limit and refuses a non-positive one', async () => {
    const s = await startGoogleLoopback(googleReply());
    servers.push(s);
    const e = createEngines({
      ...settingsOf({ QUORUM_GOOGLE_API_KEY: GOOGLE_TEST_KEY, QUORUM_GOOGLE_BASE_URL: s.baseUrl }),
      logger: quiet(),
    });
    await e.call({ engineId: 'google/gemini-2.5-pro', messages: MESSAGES, maxOutputTokens: 1_000_000 });
    assert.deepEqual((s.requests[0]?.body as { generationConfig: unknown }).generationConfig, { maxOutputTokens: 65_536 });
    const err = await engineFailure(e.call({ engineId: 'google/gemini-2.5-pro', messages: MESSAGES, maxOutputTokens: 0 }));
    assert.equal(err.kind, 'bad_request');
    const unknown = await engineFailure(e.call({ engineId: 'google/gemini-0', messages: MESSAGES, maxOutputTokens: 10 }));
    assert.equal(unknown.kind, 'unknown_model');
  });

  it('google: thinking tokens count as output, RetryInfo sets the wait, API_KEY_INVALID is auth', async () => {
    const s = await startGoogleLoopback([
      googleReply({ text: 'Paris.', candidateTokens: 3, thoughtTokens: 40, finish: 'MAX_TOKENS' }),
      googleError(429, 'Resource has been exhausted', { retryDelay: '37s' }),
    ]);
    servers.push(s);
    const e = createEngines({
      ...settingsOf({ QUORUM_GOOGLE_API_KEY: GOOGLE_TEST_KEY, QUORUM_GOOGLE_BASE_URL: s.baseUrl }),
      logger: quiet(),
    });
    const r = await e.call({ engineId: 'google/gemini-2.5-flash', messages: MESSAGES, maxOutputTokens: 43 });
    assert.deepEqual([r.tokensOut, r.reasoningTokens, r.finish], [43, 40, 'length']);
    const limited = await engineFailure(e.call({ engineId: 'google/gemini-2.5-flash', messages: MESSAGES, maxOutputTokens: 43 }));
    assert.deepEqual([limited.kind, limited.retryAfterMs], ['rate_limited', 37_000]);
    const wrongKey = createEngines({
      ...settingsOf({ QUORUM_GOOGLE_API_KEY: 'AIzaWrongWrongWrongWrongWrong00000', QUORUM_GOOGLE_BASE_URL: s.baseUrl }),
      logger: quiet(),
    });
    const auth = await engineFailure(wrongKey.call({ engineId: 'google/gemini-2.5-flash', messages: MESSAGES, maxOutputTokens: 43 }));
    assert.deepEqual([auth.kind, auth.retryable, auth.status], ['auth', false, 400]);
  });

  it('anthropic: 529 overloaded is retryable; a wrong key is refused by the server as 401', async () => {
    const s = await startAnthropicLoopback(anthropicError(529, 'Overloaded'));
    servers.push(s);
    const e = createEngines({
      ...settingsOf({ QUORUM_ANTHROPIC_API_KEY: ANTHROPIC_TEST_KEY, QUORUM_ANTHROPIC_BASE_URL: s.baseUrl }),
      logger: quiet(),
    });
    const over = await engineFailure(e.call({ engineId: 'anthropic/claude-3-5-haiku', messages: MESSAGES, maxOutputTokens: 20 }));
    assert.deepEqual([over.kind, over.retryable, over.status], ['server', true, 529]);
    const own = { kind: 'api_key' as const, apiKey: 'sk-ant-not-the-right-key-000000', baseUrl: s.baseUrl, source: 'own_key' as const };
    const auth = await engineFailure(e.call({ engineId: 'anthropic/claude-3-5-haiku', messages: MESSAGES, maxOutputTokens: 20 }, own));
    assert.deepEqual([auth.kind, auth.status], ['auth', 401]);
    assert.equal(s.rejected.length, 1);
  });
});
