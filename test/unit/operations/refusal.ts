import assert from 'node:assert/strict';
import { QuorumError } from '../../../domain/errors';

/** The QuorumError `fn` throws; a test fails when it throws anything else or nothing. */
export function refusal(fn: () => unknown): QuorumError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof QuorumError, String(err));
    return err;
  }
  assert.fail('expected a refusal');
}
