import assert from 'node:assert/strict';
import { createLogger, type Logger } from '../../../infra/log';
import { createEngines, EngineError, type Engines } from '../../../engines';
import {
  ANTHROPIC_TEST_KEY,
  anthropicError,
  anthropicReply,
  GOOGLE_TEST_KEY,
  googleError,
  googleReply,
  OPENAI_TEST_KEY,
  openAiError,
  openAiReply,
  startAnthropicLoopback,
  startGoogleLoopback,
  startOpenAiLoopback,
  type Loopback,
  type Reply,
  type Script,
} from '../../fixtures/providers';
import { settingsOf } from '../../harness/settings';

/** A logger whose lines are kept, to search them for secrets. */
export function captureLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  return { logger: createLogger('engines', (l) => lines.push(l)), lines };
}

/** Awaits a promise that must fail with an EngineError, and returns it. */
export async function engineFailure(promise: Promise<unknown>): Promise<EngineError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof EngineError, `expected an EngineError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected the call to fail');
}

export const MESSAGES = [
  { role: 'system' as const, content: 'You are a careful assistant.' },
  { role: 'user' as const, content: 'What is the capital of France?' },
];

/** What differs between the three API-key protocols' loopbacks; each test file adds what it checks of them. */
export interface ApiKeyProtocol {
  family: 'openai' | 'anthropic' | 'google';
  engineId: string;
  key: string;
  start(script: Script): Promise<Loopback>;
  ok(opts: { text: string; truncated?: boolean; tokensIn: number; tokensOut: number }): Reply;
  error(status: number, message: string, headers?: Record<string, string>): Reply;
}

export const API_KEY_PROTOCOLS: Readonly<Record<ApiKeyProtocol['family'], ApiKeyProtocol>> = {
  openai: {
    family: 'openai',
    engineId: 'openai/gpt-4.1',
    key: OPENAI_TEST_KEY,
    start: (s) => startOpenAiLoopback(s),
    ok: (o) =>
      openAiReply({ text: o.text, finish: o.truncated ? 'length' : 'stop', promptTokens: o.tokensIn, completionTokens: o.tokensOut }),
    error: openAiError,
  },
  anthropic: {
    family: 'anthropic',
    engineId: 'anthropic/claude-sonnet-4',
    key: ANTHROPIC_TEST_KEY,
    start: (s) => startAnthropicLoopback(s),
    ok: (o) =>
      anthropicReply({ text: o.text, stop: o.truncated ? 'max_tokens' : 'end_turn', inputTokens: o.tokensIn, outputTokens: o.tokensOut }),
    error: anthropicError,
  },
  google: {
    family: 'google',
    engineId: 'google/gemini-2.5-flash',
    key: GOOGLE_TEST_KEY,
    start: (s) => startGoogleLoopback(s),
    ok: (o) =>
      googleReply({ text: o.text, finish: o.truncated ? 'MAX_TOKENS' : 'STOP', promptTokens: o.tokensIn, candidateTokens: o.tokensOut }),
    error: (status, message, headers) => googleError(status, message, { headers }),
  },
};

/** The engines with the protocol's service key pointed at its loopback, started with `script`. */
export async function loopbackEngines(p: ApiKeyProtocol, script: Script): Promise<{ engines: Engines; server: Loopback }> {
  const server = await p.start(script);
  const prefix = `QUORUM_${p.family.toUpperCase()}`;
  const env = { [`${prefix}_API_KEY`]: p.key, [`${prefix}_BASE_URL`]: server.baseUrl };
  return { engines: createEngines({ ...settingsOf(env), logger: captureLogger().logger }), server };
}
