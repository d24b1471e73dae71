import assert from 'node:assert/strict';
import { ENGINE_CALL_LOCAL } from '../../../workflows/engine-call-policy';

/**
 * Issue 42 item 6: a local engine call has no per-try start-to-close (Core leaves a retried try's timer running, and it
 * panics once the worker has stopped), and its one schedule-to-close allows what the per-try limit did.
 */
describe('engine calls as local activities: one budget over all tries', () => {
  it('has no start-to-close, and a schedule-to-close of 3 tries of 200 s plus the 1 s and 2 s backoffs between them', () => {
    assert.equal(ENGINE_CALL_LOCAL.startToCloseTimeout, undefined);
    // By hand from ENGINE_CALL: 200 + 1 + 200 + 2 + 200 seconds.
    assert.equal(ENGINE_CALL_LOCAL.scheduleToCloseTimeout, 603_000);
  });
});
