import assert from 'node:assert/strict';
import { createLogger, type Logger } from '../../../infra/log';
import { EngineError } from '../../../engines';

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
