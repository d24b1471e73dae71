import assert from 'node:assert/strict';
import { ENGINE_CALL_LOCAL } from '../../../workflows/engine-call-policy';
import { overAllTries, untilDone } from '../../../workflows/local-activity-timeouts';

/**
 * Issue 42 item 6: no local activity has a per-try start-to-close (Core leaves a retried try's timer running, and it
 * panics once the worker has stopped); one schedule-to-close allows what the per-try limit did.
 */
describe('local activities: one budget over all tries', () => {
  it('an engine call: no start-to-close, a schedule-to-close of 3 tries of 200 s plus the 1 s and 2 s backoffs between them', () => {
    assert.equal(ENGINE_CALL_LOCAL.startToCloseTimeout, undefined);
    // By hand from ENGINE_CALL: 200 + 1 + 200 + 2 + 200 seconds.
    assert.equal(ENGINE_CALL_LOCAL.scheduleToCloseTimeout, 603_000);
  });

  it("a search's two tries of 20 s: 20 + 1 (the SDK's default first backoff) + 20 seconds", () => {
    const grounding = overAllTries({ startToCloseTimeout: '20 seconds', retry: { maximumAttempts: 2 } });
    assert.equal(grounding.startToCloseTimeout, undefined);
    assert.equal(grounding.scheduleToCloseTimeout, 41_000);
    assert.deepEqual(grounding.retry, { maximumAttempts: 2 });
  });

  it('refuses a budget it cannot bound (no per-try timeout, or unlimited tries)', () => {
    assert.throws(() => overAllTries({ startToCloseTimeout: '20 seconds' }), /bounded number of tries/);
    assert.throws(() => overAllTries({ scheduleToCloseTimeout: '20 seconds', retry: { maximumAttempts: 2 } }), /per-try timeout/);
  });

  it('a step that retries until done: no start-to-close, no cap on tries, the policy kept', () => {
    const step = untilDone({ initialInterval: '200 milliseconds', maximumAttempts: 3, nonRetryableErrorTypes: ['QuorumError'] });
    assert.equal(step.startToCloseTimeout, undefined);
    assert.equal(step.scheduleToCloseTimeout, '7 days');
    assert.equal(step.retry?.maximumAttempts, undefined);
    assert.deepEqual(step.retry?.nonRetryableErrorTypes, ['QuorumError']);
  });
});
