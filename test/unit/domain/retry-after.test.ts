import assert from 'node:assert/strict';
import { inProgressRetryAfter, remainingMs, stageTimes, type CallProgress } from '../../../domain/retry-after';

/** The `Retry-After` of a 409 `request_in_progress`: what the running call has left, in [1, 60] seconds. */

// A mode whose calls take 4 s per seat pass, 2 s to judge, 3 s to synthesise, two rounds: 4+2+4+2+3 = 15 s a call.
const observed = stageTimes({ seatPassMs: 4_000, judgeMs: 2_000, synthesisMs: 3_000, rounds: 2 });
const at = (p: Partial<CallProgress> & Pick<CallProgress, 'stage'>): CallProgress => ({ round: 0, seats: 0, seatsAnswered: 0, ...p });

describe('Retry-After of a call in progress', () => {
  it('is the stages left: the whole call before its seats answer, less each stage passed', () => {
    assert.equal(remainingMs(at({ stage: 'classifying' }), observed), 15_000);
    assert.equal(remainingMs(at({ stage: 'seats', round: 1, seats: 3 }), observed), 15_000);
    // Two of three seats answered: a third of the pass is left.
    assert.equal(
      Math.round(remainingMs(at({ stage: 'seats', round: 1, seats: 3, seatsAnswered: 2 }), observed)),
      Math.round(4_000 / 3 + 2_000 + 6_000 + 3_000),
    );
    assert.equal(remainingMs(at({ stage: 'judging', round: 1 }), observed), 2_000 + 6_000 + 3_000);
    assert.equal(remainingMs(at({ stage: 'critique', round: 2, seats: 3 }), observed), 4_000 + 2_000 + 3_000);
    assert.equal(remainingMs(at({ stage: 'judging', round: 2 }), observed), 2_000 + 3_000);
    assert.equal(remainingMs(at({ stage: 'synthesising' }), observed), 3_000);
    assert.equal(remainingMs(at({ stage: 'settling' }), observed), 0);
  });

  it('a lone seat (the express lane) has only its seat pass left', () => {
    assert.equal(remainingMs(at({ stage: 'seats', round: 1, seats: 1 }), observed), 4_000);
  });

  it('a round beyond the typical count has only its own judge and the synthesis left', () => {
    assert.equal(remainingMs(at({ stage: 'judging', round: 4 }), observed), 2_000 + 3_000);
  });

  it('without progress (the workflow could not say), the whole call', () => {
    assert.equal(remainingMs(undefined, observed), 15_000);
    assert.equal(inProgressRetryAfter(undefined, observed), 15);
  });

  it('rounds up to whole seconds, never below 1 s nor above 60 s', () => {
    assert.equal(inProgressRetryAfter(at({ stage: 'seats', round: 1, seats: 3, seatsAnswered: 2 }), observed), 13);
    assert.equal(inProgressRetryAfter(at({ stage: 'settling' }), observed), 1);
    const slow = stageTimes({ seatPassMs: 90_000, judgeMs: 30_000, synthesisMs: 30_000, rounds: 3 });
    assert.equal(inProgressRetryAfter(at({ stage: 'seats', round: 1, seats: 3 }), slow), 60);
  });

  it('without observed calls, the spec’s p50 of 28.5 s a deliberation, over one seat pass, the judge and the synthesis', () => {
    const spec = stageTimes({ seatPassMs: null, judgeMs: null, synthesisMs: null, rounds: null });
    assert.equal(Math.round(remainingMs(undefined, spec)), 28_500);
    assert.equal(Math.round(remainingMs(at({ stage: 'synthesising' }), spec)), 9_500);
    assert.equal(inProgressRetryAfter(at({ stage: 'seats', round: 1, seats: 3 }), spec), 29);
  });
});
