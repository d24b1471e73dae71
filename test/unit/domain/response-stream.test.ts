import assert from 'node:assert/strict';
import type { AnswerChunk, DeliberationEvent, StoredEvent } from '../../../domain/deliberation-events';
import { streamPlan } from '../../../domain/response-stream';

const at = new Date('2026-11-27T10:00:00Z');
const ANSWER = 'The sky is blue because air scatters blue light most.';
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
    const p = streamPlan({ stored: stored(steps), chunks: [], ended: null, giveUp: false });
    assert.deepEqual(kinds(p), ['0:created', '1:in_progress', '2:classified', '3:seat_answered', '4:seat_answered', '5:seat_answered']);
    assert.equal(p.finished, false);
  });

  it('sends no step after a missing one: index 2 stored before index 1 waits for it', () => {
    const p = streamPlan({ stored: stored(steps, [1]), chunks: [], ended: null, giveUp: false });
    assert.deepEqual(kinds(p), ['0:created', '1:in_progress', '2:classified']);
  });

  it('an answered call ends with OpenAI’s six answer events and the end, numbered on from the last step', () => {
    const p = streamPlan({
      stored: stored([...steps, { type: 'ended' }]),
      chunks: [],
      ended: { answered: true, failed: false, answer: ANSWER },
      giveUp: false,
    });
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
    const waiting = streamPlan({ stored: stored(steps), chunks: [], ended: { answered: false, failed: false, answer: '' }, giveUp: false });
    assert.equal(waiting.finished, false);
    assert.equal(waiting.items.length, 6);
    const given = streamPlan({ stored: stored(steps), chunks: [], ended: { answered: false, failed: false, answer: '' }, giveUp: true });
    assert.deepEqual(kinds(given).slice(6), ['6:ended']);
    assert.equal(given.finished, true);
  });

  it('a failed call ends with OpenAI’s `error` event, then its end (`response.failed`), numbered on from the last step', () => {
    const p = streamPlan({
      stored: stored([...steps, { type: 'ended' }]),
      chunks: [],
      ended: { answered: false, failed: true, answer: '' },
      giveUp: false,
    });
    assert.deepEqual(kinds(p).slice(6), ['6:error', '7:ended']);
    assert.equal(p.finished, true);
  });

  it('reads the same numbers whatever order the rows come in: a resumed reader sends what a cut one did not', () => {
    const all = stored([...steps, { type: 'ended' }]);
    const a = streamPlan({ stored: all, chunks: [], ended: { answered: true, failed: false, answer: ANSWER }, giveUp: false });
    const b = streamPlan({
      stored: [...all].reverse(),
      chunks: [],
      ended: { answered: true, failed: false, answer: ANSWER },
      giveUp: false,
    });
    assert.deepEqual(kinds(b), kinds(a));
    assert.deepEqual(
      a.items.map((i) => i.seq),
      a.items.map((_, i) => i),
    );
  });
});

describe('a response stream sends the answer as its engine writes it (issue 53 item 4)', () => {
  const steps: DeliberationEvent[] = [{ type: 'classified', lane: 'panel', depth: 'medium' }, seat(1), { type: 'synthesising' }];
  const pieces = ['The sky is blue ', 'because air scatters ', 'blue light most.'];
  const chunks = (n: number, step = 2): AnswerChunk[] => pieces.slice(0, n).map((text, part) => ({ step, part, text }));
  const texts = (p: ReturnType<typeof streamPlan>): string[] =>
    p.items.map(({ item }) => (item.kind === 'answer' ? `${item.part}:${item.text}` : item.kind === 'step' ? item.event.type : item.kind));

  it('sends each piece stored as a delta after the step it follows, before the call ends', () => {
    const p = streamPlan({ stored: stored(steps), chunks: chunks(2), ended: null, giveUp: false });
    assert.deepEqual(texts(p), [
      'created',
      'in_progress',
      'classified',
      'seat_answered',
      'synthesising',
      'item_added:',
      'part_added:',
      `delta:${pieces[0]}`,
      `delta:${pieces[1]}`,
    ]);
    assert.equal(p.finished, false);
  });

  it('ends with what follows the pieces sent as one delta, then the answer in full; no piece is sent twice', () => {
    const all = [...steps, { type: 'ended' } as DeliberationEvent];
    const p = streamPlan({
      stored: stored(all),
      chunks: chunks(2),
      ended: { answered: true, failed: false, answer: ANSWER },
      giveUp: false,
    });
    assert.deepEqual(texts(p).slice(7), [
      `delta:${pieces[0]}`,
      `delta:${pieces[1]}`,
      `delta:${pieces[2]}`,
      `text_done:${ANSWER}`,
      `part_done:${ANSWER}`,
      `item_done:${ANSWER}`,
      'ended',
    ]);
    const deltas = p.items.flatMap(({ item }) => (item.kind === 'answer' && item.part === 'delta' ? [item.text] : []));
    assert.equal(deltas.join(''), ANSWER);
    const whole = streamPlan({
      stored: stored(all),
      chunks: chunks(3),
      ended: { answered: true, failed: false, answer: ANSWER },
      giveUp: false,
    });
    assert.deepEqual(texts(whole).slice(7, 11), [`delta:${pieces[0]}`, `delta:${pieces[1]}`, `delta:${pieces[2]}`, `text_done:${ANSWER}`]);
  });

  it('numbers every event as the first reader did whatever it read later: each plan is the start of the next', () => {
    const all = [...steps, { type: 'ended' } as DeliberationEvent];
    // What a reader sees as the call goes on: steps, then pieces one by one, then the end.
    const states = [
      streamPlan({ stored: stored(steps.slice(0, 2)), chunks: [], ended: null, giveUp: false }),
      streamPlan({ stored: stored(steps), chunks: [], ended: null, giveUp: false }),
      streamPlan({ stored: stored(steps), chunks: chunks(1), ended: null, giveUp: false }),
      streamPlan({ stored: stored(steps), chunks: chunks(3), ended: null, giveUp: false }),
      streamPlan({ stored: stored(all), chunks: chunks(3), ended: { answered: true, failed: false, answer: ANSWER }, giveUp: false }),
    ];
    for (let i = 1; i < states.length; i++) {
      const before = texts(states[i - 1]);
      assert.deepEqual(texts(states[i]).slice(0, before.length), before, `plan ${i} begins with plan ${i - 1}`);
    }
    const last = states.at(-1)?.items ?? [];
    assert.deepEqual(
      last.map((i) => i.seq),
      last.map((_, i) => i),
    );
  });

  it('a step after pieces carries the answer begun (the SDK helpers take each step’s response for their snapshot)', () => {
    const express: DeliberationEvent[] = [{ type: 'classified', lane: 'express', depth: 'light' }, seat(1)];
    const p = streamPlan({ stored: stored(express), chunks: chunks(2, 0), ended: null, giveUp: false });
    const steps = p.items.flatMap(({ item }) => (item.kind === 'step' ? [[item.event.type, item.answerSoFar]] : []));
    assert.deepEqual(steps, [
      ['classified', null],
      ['seat_answered', pieces[0] + pieces[1]],
    ]);
  });

  it('waits for a missing piece: part 2 stored before part 1 is not sent', () => {
    const p = streamPlan({ stored: stored(steps), chunks: [chunks(3)[0], chunks(3)[2]], ended: null, giveUp: false });
    assert.deepEqual(texts(p).slice(5), ['item_added:', 'part_added:', `delta:${pieces[0]}`]);
  });

  it("a call's result between its pieces and a later call's (an empty piece) sends nothing and does not stop the pieces after it", () => {
    const cut = chunks(1);
    const after = [...cut, { step: 2, part: 1, text: '' }, { step: 2, part: 2, text: pieces[1] }];
    const p = streamPlan({ stored: stored(steps), chunks: after, ended: null, giveUp: false });
    assert.deepEqual(texts(p).slice(5), ['item_added:', 'part_added:', `delta:${pieces[0]}`, `delta:${pieces[1]}`]);
  });

  it('pieces that do not begin the answer (a writer lost for good mid-answer) are not followed by more: the answer comes in full in its done events', () => {
    const all = [...steps, { type: 'ended' } as DeliberationEvent];
    const other = 'A different answer written by the seat.';
    const p = streamPlan({
      stored: stored(all),
      chunks: chunks(1),
      ended: { answered: true, failed: false, answer: other },
      giveUp: false,
    });
    assert.deepEqual(texts(p).slice(7), [`delta:${pieces[0]}`, `text_done:${other}`, `part_done:${other}`, `item_done:${other}`, 'ended']);
  });

  it('a call cancelled or failed mid-answer ends after the pieces sent, its message not closed as if answered', () => {
    const all = [...steps, { type: 'ended' } as DeliberationEvent];
    const cancelled = streamPlan({
      stored: stored(all),
      chunks: chunks(2),
      ended: { answered: false, failed: false, answer: '' },
      giveUp: false,
    });
    assert.deepEqual(texts(cancelled).slice(7), [`delta:${pieces[0]}`, `delta:${pieces[1]}`, 'ended']);
    const failed = streamPlan({
      stored: stored(all),
      chunks: chunks(2),
      ended: { answered: false, failed: true, answer: '' },
      giveUp: false,
    });
    assert.deepEqual(texts(failed).slice(7), [`delta:${pieces[0]}`, `delta:${pieces[1]}`, 'error', 'ended']);
  });
});
