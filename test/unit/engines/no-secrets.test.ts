import assert from 'node:assert/strict';
import { createEngines, type Credential, type EngineError } from '../../../engines';
import {
  ANTHROPIC_TEST_KEY,
  GOOGLE_TEST_KEY,
  OPENAI_TEST_KEY,
  startAnthropicLoopback,
  startGoogleLoopback,
  startOpenAiLoopback,
  type Loopback,
} from '../../fixtures/providers';
import { captureLogger, engineFailure, MESSAGES } from './helpers';
import { settingsOf } from '../../harness/settings';

/** Everything an error exposes to a log or an API body. */
function exposed(err: EngineError): string {
  return [err.message, err.stack ?? '', JSON.stringify(err), String(err)].join('\n');
}

describe('engines: no credential in any log line or error', () => {
  const servers: Loopback[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });

  it('service keys echoed back by a provider never reach the error or the log', async () => {
    // Each fake expects another key, so it refuses ours and quotes it back in the message.
    const openai = await startOpenAiLoopback({}, { apiKey: 'sk-expected-something-else-000' });
    const anthropic = await startAnthropicLoopback({}, { apiKey: 'sk-ant-expected-something-else' });
    const google = await startGoogleLoopback({}, { apiKey: 'AIzaExpectedSomethingElse00000000' });
    servers.push(openai, anthropic, google);
    const { logger, lines } = captureLogger();
    const e = createEngines({
      ...settingsOf({
        QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY,
        QUORUM_OPENAI_BASE_URL: openai.baseUrl,
        QUORUM_ANTHROPIC_API_KEY: ANTHROPIC_TEST_KEY,
        QUORUM_ANTHROPIC_BASE_URL: anthropic.baseUrl,
        QUORUM_GOOGLE_API_KEY: GOOGLE_TEST_KEY,
        QUORUM_GOOGLE_BASE_URL: google.baseUrl,
      }),
      logger,
    });
    for (const [engineId, key, server] of [
      ['openai/gpt-4.1', OPENAI_TEST_KEY, openai],
      ['anthropic/claude-sonnet-4', ANTHROPIC_TEST_KEY, anthropic],
      ['google/gemini-2.5-flash', GOOGLE_TEST_KEY, google],
    ] as const) {
      const err = await engineFailure(e.call({ engineId, messages: MESSAGES, maxOutputTokens: 10 }));
      assert.equal(err.kind, 'auth');
      assert.equal(server.rejected.length, 1, 'the provider saw and refused the key');
      assert.match(err.message, /\[redacted\]/, 'the provider message is kept, with the key masked');
      assert.ok(!exposed(err).includes(key), `${engineId}: key in the error`);
      assert.ok(lines.length > 0);
      assert.ok(!lines.join('\n').includes(key), `${engineId}: key in the log`);
    }
  });

  it("an organisation's own key, however it looks, is scrubbed from errors and logs", async () => {
    const ownKey = 'orgplainkey93kf82jd7s6a5q4w';
    const server = await startOpenAiLoopback({}, { apiKey: 'sk-expected-something-else-000' });
    const echo500 = await startOpenAiLoopback((req) => ({ status: 500, text: `upstream failed for ${req.headers.authorization ?? ''}` }), {
      apiKey: ownKey,
    });
    servers.push(server, echo500);
    const { logger, lines } = captureLogger();
    const e = createEngines({ ...settingsOf({}), logger });
    for (const baseUrl of [server.baseUrl, echo500.baseUrl]) {
      const own: Credential = { kind: 'api_key', apiKey: ownKey, baseUrl, source: 'own_key' };
      const err = await engineFailure(e.call({ engineId: 'openai/gpt-4.1', messages: MESSAGES, maxOutputTokens: 10 }, own));
      assert.ok(!exposed(err).includes(ownKey), `own key in the error: ${err.message}`);
    }
    assert.equal(lines.length, 2);
    assert.ok(!lines.join('\n').includes(ownKey));
  });
});
