import assert from 'node:assert/strict';
import { createEngines, type Engines } from '../../../engines';
import { engineCostMicros } from '../../../domain/pricing';
import {
  ANTHROPIC_TEST_KEY,
  GOOGLE_TEST_KEY,
  header,
  OPENAI_TEST_KEY,
  type Loopback,
  type RecordedRequest,
  type Script,
} from '../../fixtures/providers';
import { API_KEY_PROTOCOLS, captureLogger, engineFailure, loopbackEngines, MESSAGES, type ApiKeyProtocol } from './helpers';
import { settingsOf } from '../../harness/settings';

/** What differs between the three API-key protocols; the behaviour under test is the same. */
interface Protocol extends ApiKeyProtocol {
  /** The provider-specific request for MESSAGES, maxOutputTokens 100, temperature 0.2; a header `undefined` must be absent. */
  request: { path: string; headers: Record<string, string | undefined>; body: unknown };
}

const PROTOCOLS: readonly Protocol[] = [
  {
    ...API_KEY_PROTOCOLS.openai,
    request: {
      path: '/v1/chat/completions',
      headers: { authorization: `Bearer ${OPENAI_TEST_KEY}` },
      body: { model: 'gpt-4.1', messages: MESSAGES, max_tokens: 100, temperature: 0.2 },
    },
  },
  {
    ...API_KEY_PROTOCOLS.anthropic,
    request: {
      path: '/v1/messages',
      headers: { 'x-api-key': ANTHROPIC_TEST_KEY, 'anthropic-version': '2023-06-01', authorization: undefined },
      body: {
        model: 'claude-sonnet-4-20250514',
        max_tokens: 100,
        system: 'You are a careful assistant.',
        messages: [{ role: 'user', content: 'What is the capital of France?' }],
        temperature: 0.2,
      },
    },
  },
  {
    ...API_KEY_PROTOCOLS.google,
    // The key travels in its header, never in the query string.
    request: {
      path: '/v1beta/models/gemini-2.5-flash:generateContent',
      headers: { 'x-goog-api-key': GOOGLE_TEST_KEY },
      body: {
        contents: [{ role: 'user', parts: [{ text: 'What is the capital of France?' }] }],
        systemInstruction: { parts: [{ text: 'You are a careful assistant.' }] },
        generationConfig: { maxOutputTokens: 100, temperature: 0.2 },
      },
    },
  },
];

for (const p of PROTOCOLS) {
  describe(`engines: ${p.family} adapter against its loopback server`, () => {
    let server: Loopback | undefined;

    async function engines(script: Script): Promise<{ engines: Engines; server: Loopback }> {
      const started = await loopbackEngines(p, script);
      server = started.server;
      return started;
    }
    const call = (e: Engines, extra: { timeoutMs?: number } = {}): ReturnType<Engines['call']> =>
      e.call({ engineId: p.engineId, messages: MESSAGES, maxOutputTokens: 100, temperature: 0.2, ...extra });

    afterEach(async () => {
      await server?.close();
      server = undefined;
    });

    it('sends the provider its own request shape and maps text, tokens and cost', async () => {
      const { engines: e, server: s } = await engines(p.ok({ text: 'Paris.', tokensIn: 21, tokensOut: 3 }));
      const result = await call(e);
      assert.deepEqual(s.rejected, []);
      assert.equal(s.requests.length, 1);
      const req = s.requests[0] as RecordedRequest;
      assert.equal(req.path, p.request.path);
      for (const [name, value] of Object.entries(p.request.headers)) assert.equal(header(req, name), value, name);
      assert.equal(req.query.get('key'), null);
      assert.deepEqual(req.body, p.request.body);
      const spec = e.spec(p.engineId);
      assert.equal(result.text, 'Paris.');
      assert.equal(result.finish, 'stop');
      assert.equal(result.tokensIn, 21);
      assert.equal(result.tokensOut, 3);
      assert.equal(result.costMicros, engineCostMicros(21, 3, spec));
      assert.ok(result.costMicros > 0);
      assert.equal(result.source, 'service');
      assert.equal(result.engineId, p.engineId);
      assert.ok(result.latencyMs >= 0);
    });

    it('reports length only from the provider truncation flag', async () => {
      const long = 'word '.repeat(400);
      const { engines: e } = await engines([
        p.ok({ text: 'Par', truncated: true, tokensIn: 21, tokensOut: 100 }),
        p.ok({ text: long, tokensIn: 21, tokensOut: 400 }),
      ]);
      const cut = await call(e);
      assert.equal(cut.finish, 'length');
      assert.equal(cut.text, 'Par');
      // A long answer without the flag is a whole answer.
      assert.equal((await call(e)).finish, 'stop');
    });

    it('429 with retry-after is retryable and carries the wait', async () => {
      const { engines: e } = await engines(p.error(429, 'Rate limit reached, slow down', { 'retry-after': '7' }));
      const err = await engineFailure(call(e));
      assert.equal(err.kind, 'rate_limited');
      assert.equal(err.retryable, true);
      assert.equal(err.retryAfterMs, 7000);
      assert.equal(err.status, 429);
      assert.match(err.message, /Rate limit reached, slow down/);
    });

    it('500 is retryable', async () => {
      const { engines: e } = await engines(p.error(500, 'The server had an error'));
      const err = await engineFailure(call(e));
      assert.equal(err.kind, 'server');
      assert.equal(err.retryable, true);
      assert.match(err.message, /The server had an error/);
    });

    it('401 is a permanent auth failure', async () => {
      const { engines: e } = await engines(p.error(401, 'invalid credentials'));
      const err = await engineFailure(call(e));
      assert.equal(err.kind, 'auth');
      assert.equal(err.retryable, false);
      assert.equal(err.status, 401);
    });

    it('404 (unknown model) and 400 are permanent', async () => {
      const { engines: e } = await engines([p.error(404, 'model not found'), p.error(400, 'messages: invalid')]);
      const notFound = await engineFailure(call(e));
      assert.equal(notFound.kind, 'unknown_model');
      assert.equal(notFound.retryable, false);
      const bad = await engineFailure(call(e));
      assert.equal(bad.kind, 'bad_request');
      assert.equal(bad.retryable, false);
    });

    it('a malformed body is a permanent malformed error, never a crash or an empty answer', async () => {
      const { engines: e } = await engines([{ text: '<html>gateway</html>' }, { json: { unexpected: true } }, { json: [] }]);
      for (let i = 0; i < 3; i += 1) {
        const err = await engineFailure(call(e));
        assert.equal(err.kind, 'malformed');
        assert.equal(err.retryable, false);
      }
    });

    it('an empty answer without a truncation flag is malformed', async () => {
      const { engines: e } = await engines(p.ok({ text: '', tokensIn: 21, tokensOut: 0 }));
      const err = await engineFailure(call(e));
      assert.equal(err.kind, 'malformed');
    });

    it('a provider slower than the deadline is a retryable timeout', async () => {
      const { engines: e } = await engines({ ...p.ok({ text: 'late', tokensIn: 1, tokensOut: 1 }), delayMs: 2000 });
      const started = Date.now();
      const err = await engineFailure(call(e, { timeoutMs: 150 }));
      assert.equal(err.kind, 'timeout');
      assert.equal(err.retryable, true);
      assert.ok(Date.now() - started < 1500);
    });

    it('a reset connection is retryable', async () => {
      const { engines: e } = await engines({ hangUp: true });
      const err = await engineFailure(call(e));
      assert.equal(err.kind, 'connection');
      assert.equal(err.retryable, true);
    });

    it('runs on an organisation key when one is given, and labels the source', async () => {
      const { server: s } = await engines(p.ok({ text: 'Paris.', tokensIn: 21, tokensOut: 3 }));
      // The service has no key for this family at all: the own key is what makes it available.
      const e = createEngines({ ...settingsOf({}), logger: captureLogger().logger });
      assert.equal(e.isAvailable(p.engineId), false);
      const own = { kind: 'api_key' as const, apiKey: p.key, baseUrl: s.baseUrl, source: 'own_key' as const };
      assert.equal(e.isAvailable(p.engineId, own), true);
      const result = await e.call({ engineId: p.engineId, messages: MESSAGES, maxOutputTokens: 100, temperature: 0.2 }, own);
      assert.equal(result.source, 'own_key');
      assert.deepEqual(s.rejected, []);
    });

    it('is unavailable without a key, and a call says so permanently', async () => {
      const e = createEngines({ ...settingsOf({}), logger: captureLogger().logger });
      assert.equal(e.isAvailable(p.engineId), false);
      const err = await engineFailure(call(e));
      assert.equal(err.kind, 'unavailable');
      assert.equal(err.retryable, false);
    });
  });
}
