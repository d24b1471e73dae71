import assert from 'node:assert/strict';
import { runEndedEvent, type RunEventSource } from '../../../domain/run-event';

describe('domain: the run.ended event', () => {
  const source: RunEventSource = {
    id: '0b0c2f5e-6d3c-4a53-9a57-1f4e8b9c2d10',
    kind: 'certification',
    state: 'completed',
    model: 'DEMO:STRG',
    keyKind: 'live',
    totalQuestions: 150,
    billedMicros: 50_000_000,
    refundedMicros: 0,
    errorCode: null,
    errorMessage: null,
    summary: null,
    finishedAt: new Date('2026-11-27T00:00:00Z'),
  };

  it('says whether the run was simulated: a test key’s run is, a live key’s is not (issue 38 item 4)', () => {
    assert.equal(runEndedEvent(source).simulated, false);
    assert.equal(runEndedEvent({ ...source, keyKind: 'test' }).simulated, true);
  });
});
