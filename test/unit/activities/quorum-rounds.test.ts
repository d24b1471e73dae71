import assert from 'node:assert/strict';
import { ApplicationFailure } from '@temporalio/activity';
import { graceThenCut, joinRound, lateFailure, releaseRound } from '../../../activities/quorum-rounds';

/** The worker's side of a quorum's cut (issue 40 item 6): aborts, never Temporal cancellations. */
describe('quorum rounds in the worker', () => {
  let n = 0;
  const key = (): string => `test-run/${++n}`;
  const never = new AbortController().signal;

  it('the grace passes: the calls still out are aborted; a call that left first is not', async () => {
    const k = key();
    const out = joinRound(k);
    const done = joinRound(k);
    done.leave();
    const started = Date.now();
    await graceThenCut(k, 50, never);
    assert.ok(Date.now() - started >= 45, 'the whole grace');
    assert.equal(out.signal.aborted, true);
    assert.equal(done.signal.aborted, false);
  });

  it('released (every seat settled): the grace ends at once and cuts nothing', async () => {
    const k = key();
    const call = joinRound(k);
    const started = Date.now();
    const grace = graceThenCut(k, 10_000, never);
    releaseRound(k);
    await grace;
    assert.ok(Date.now() - started < 1_000, 'ended by the release, not the 10 s');
    assert.equal(call.signal.aborted, false);
  });

  it('a round run again (its workflow task ran again) has its grace afresh, and its calls are never refused', async () => {
    const k = key();
    releaseRound(k);
    await graceThenCut(k, 0, never);
    const again = joinRound(k);
    await graceThenCut(k, 20, never);
    assert.equal(again.signal.aborted, true, 'the second grace cut the call of the second run');
  });

  it('late is a non-retryable failure of its own type, not a cancellation', () => {
    const failure = lateFailure();
    assert.ok(failure instanceof ApplicationFailure);
    assert.deepEqual([failure.type, failure.nonRetryable], ['QuorumLate', true]);
  });
});
