import assert from 'node:assert/strict';
import {
  CALLER_MESSAGE_MAX,
  callerMessage,
  callerReason,
  failureLine,
  unavailableMessage,
  withoutAddresses,
} from '../../../domain/caller-errors';
import { createEngines } from '../../../engines';
import { OPENAI_TEST_KEY, openAiError, startOpenAiLoopback } from '../../fixtures/providers';
import { captureLogger, engineFailure, MESSAGES } from './helpers';
import { settingsOf } from '../../harness/settings';

const KEYISH = 'sk-proj-FAKEfake0123456789abcdefXYZ';
const LONG_BODY = `upstream worker pool exhausted at http://inference.internal:8443/v1/pool?id=7 (token ${KEYISH}) ${'stack frame '.repeat(150)}`;

describe('errors a caller can read (issue 27 item 6)', () => {
  it('removes URLs, IP addresses and host:port, and keeps the words', () => {
    assert.equal(
      withoutAddresses('connect ECONNREFUSED 127.0.0.1:18999, then https://api.example.com/v1/x?a=1 and db.internal:5432 and [::1]:80'),
      'connect ECONNREFUSED [address], then [address] and [address] and [address]',
    );
    assert.equal(withoutAddresses('provider error 503'), 'provider error 503');
  });

  it("a failure line keeps the provider's words for the receipt; the caller's part is the reason alone", () => {
    const line = failureLine('provider error 500', 'The model `x` does not exist at http://10.0.0.7:9000/v1');
    assert.equal(line, 'provider error 500 — provider said: The model `x` does not exist at [address]');
    assert.equal(callerReason(`openai/gpt-4.1: ${line}`), 'openai/gpt-4.1: provider error 500');
    assert.equal(failureLine('timed out', undefined), 'timed out');
  });

  it("mode_unavailable's message: seats that failed alike named together, the engine once, at most 300 characters", () => {
    const line = `openai/gpt-4.1: ${failureLine('provider error 500', LONG_BODY)}`;
    const message = unavailableMessage(['seat1', 'seat2', 'seat3'].map((role) => ({ role, failures: [line] })));
    assert.equal(message, 'No seat could answer; nothing was billed. seat1, seat2, seat3 — openai/gpt-4.1: provider error 500');
    // The message the issue saw: 1,933 characters, each seat with its own long story.
    const long = unavailableMessage(
      ['seat1', 'seat2', 'seat3'].map((role, i) => ({
        role,
        failures: [`engine-${i}/model-${'x'.repeat(120)}: provider unreachable`, `sim/alpha-plus: timed out ${'y'.repeat(40)}`],
      })),
    );
    assert.ok(long.length <= CALLER_MESSAGE_MAX, `${long.length}: ${long}`);
    assert.match(long, /^No seat could answer; nothing was billed\. seat1 — engine-0\/model-x+/);
    assert.match(long, /\(\+\d more\)$/);
    assert.equal(callerMessage(`a  b\n${'c '.repeat(400)}`).length <= CALLER_MESSAGE_MAX, true);
  });

  it('EngineError: the log keeps the provider text and address, the reason and line never carry an address or a key', async () => {
    const { logger, lines } = captureLogger();
    const openai = await startOpenAiLoopback(() => openAiError(500, LONG_BODY));
    const closed = await startOpenAiLoopback(() => openAiError(500, 'unused'));
    await closed.close();
    try {
      const env = { QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY, QUORUM_OPENAI_BASE_URL: openai.baseUrl };
      const call = { engineId: 'openai/gpt-4.1', messages: MESSAGES, maxOutputTokens: 50 };
      const upstream = await engineFailure(createEngines({ ...settingsOf(env), logger }).call(call));
      assert.equal(upstream.reason, 'provider error 500');
      assert.match(
        upstream.line,
        /^provider error 500 — provider said: upstream worker pool exhausted at \[address\] \(token \[redacted\]\)/,
      );
      assert.ok(upstream.line.length < 250);
      assert.match(upstream.message, /inference\.internal:8443/, 'the full detail, for the log');
      const refused = await engineFailure(
        createEngines({ ...settingsOf({ ...env, QUORUM_OPENAI_BASE_URL: closed.baseUrl }), logger }).call(call),
      );
      assert.deepEqual(
        [refused.kind, refused.reason, refused.line],
        ['connection', 'provider unreachable (ECONNREFUSED)', 'provider unreachable (ECONNREFUSED)'],
      );
      assert.match(refused.message, /127\.0\.0\.1:\d+/);
      assert.ok(
        lines.some((l) => l.includes('inference.internal:8443')),
        'the log has the detail',
      );
      assert.ok(
        lines.every((l) => !l.includes(KEYISH)),
        'and no key',
      );
    } finally {
      await openai.close();
    }
  });
});
