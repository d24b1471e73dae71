import assert from 'node:assert/strict';
import type { DeliberationEvent, StoredEvent } from '../../../domain/deliberation-events';
import { streamPlan } from '../../../domain/response-stream';

const at = new Date('2026-11-27T10:00:00Z');
const seat = (n: number): DeliberationEvent => ({
  type: 'seat_answered',
  round: 1,
  role: `seat${n}`,
  model: 'sim-a',
  seatsAnswered: n,
  seats: 3,
  endedAt: at.toISOString(),
});
const stored = (events: DeliberationEvent[], skip: number[] = []): StoredEvent[] =>
  events.map((event, index) => ({ index, event, recordedAt: at })).filter((s) => !skip.includes(s.index));
const kinds = (p: ReturnType<typeof streamPlan>): string[] =>
  p.items.map(({ seq, item }) => `${seq}:${item.kind === 'answer' ? item.part : item.kind === 'step' ? item.event.type : item.kind}`);

describe('a response stream’s events from what is stored (issue 40 item 2)', () => {
  const steps: DeliberationEvent[] = [{ type: 'classified', lane: 'panel', depth: 'medium' }, seat(1), seat(2), seat(3)];

  it('numbers created 0, in_progress 1 and the step stored under index k 2 + k, and is not finished while the call runs', () => {
    const p = streamPlan({ stored: stored(steps), ended: null, giveUp: false });
    assert.deepEqual(kinds(p), ['0:created', '1:in_progress', '2:classified', '3:seat_answered', '4:seat_answered', '5:seat_answered']);
    assert.equal(p.finished, false);
  });

  it('sends no step after a missing one: index 2 stored before index 1 waits for it', () => {
    const p = streamPlan({ stored: stored(steps, [1]), ended: null, giveUp: false });
    assert.deepEqual(kinds(p), ['0:created', '1:in_progress', '2:classified']);
  });

  it('an answered call ends with OpenAI’s six answer events and the end, numbered on from the last step', () => {
    const p = streamPlan({ stored: stored([...steps, { type: 'ended' }]), ended: { answered: true, failed: false }, giveUp: false });
    assert.deepEqual(kinds(p).slice(6), [
      '6:item_added',
      '7:part_added',
      '8:delta',
      '9:text_done',
      '10:part_done',
      '11:item_done',
      '12:ended',
    ]);
    assert.equal(p.finished, true);
  });

  it('an ended call whose last index is not stored yet waits for it, unless the reader gave up on it', () => {
    const waiting = streamPlan({ stored: stored(steps), ended: { answered: false, failed: false }, giveUp: false });
    assert.equal(waiting.finished, false);
    assert.equal(waiting.items.length, 6);
    const given = streamPlan({ stored: stored(steps), ended: { answered: false, failed: false }, giveUp: true });
    assert.deepEqual(kinds(given).slice(6), ['6:ended']);
    assert.equal(given.finished, true);
  });

  it('a failed call ends with OpenAI’s `error` event, then its end (`response.failed`), numbered on from the last step', () => {
    const p = streamPlan({ stored: stored([...steps, { type: 'ended' }]), ended: { answered: false, failed: true }, giveUp: false });
    assert.deepEqual(kinds(p).slice(6), ['6:error', '7:ended']);
    assert.equal(p.finished, true);
  });

  it('reads the same numbers whatever order the rows come in: a resumed reader sends what a cut one did not', () => {
    const all = stored([...steps, { type: 'ended' }]);
    const a = streamPlan({ stored: all, ended: { answered: true, failed: false }, giveUp: false });
    const b = streamPlan({ stored: [...all].reverse(), ended: { answered: true, failed: false }, giveUp: false });
    assert.deepEqual(kinds(b), kinds(a));
    assert.deepEqual(
      a.items.map((i) => i.seq),
      a.items.map((_, i) => i),
    );
  });
});
