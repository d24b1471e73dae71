import assert from 'node:assert/strict';
import { StepWaits } from '../../../worker/step-waits';

/** The waits between a deliberation's steps inside the worker (issue 42 item 2), from hand-worked timestamps. */
describe('step waits (issue 42 item 2)', () => {
  it("sums a run's turnarounds on its critical path, counting a round scheduled together once", () => {
    const w = new StepWaits();
    // prepare scheduled at 0, runs 2 ms later, ends at 10.
    assert.equal(w.started('r', 0, 2), 2);
    assert.equal(w.ended('r', 10, false), undefined);
    // Three seats scheduled together at 14 (a turnaround of 4), started at 15, 16 and 20.
    assert.equal(w.started('r', 14, 15), 1);
    assert.equal(w.started('r', 14, 16), 2);
    assert.equal(w.started('r', 14, 20), 6);
    // They end at 500, 530 and 510; the judge is scheduled 25 ms after the last (530).
    w.ended('r', 500, false);
    w.ended('r', 530, false);
    w.ended('r', 510, false);
    w.started('r', 555, 556);
    w.ended('r', 900, false);
    // settle scheduled 5 ms after the judge's end; its end is the run's last.
    w.started('r', 905, 905);
    assert.deepEqual(w.ended('r', 910, true), { turnaroundMs: 4 + 25 + 5, turnarounds: 3 });
    // Forgotten: a later end of the same run reports nothing.
    assert.equal(w.ended('r', 920, true), undefined);
  });

  it('keeps runs apart', () => {
    const w = new StepWaits();
    w.started('a', 0, 0);
    w.started('b', 0, 0);
    w.ended('a', 10, false);
    w.ended('b', 100, false);
    w.started('a', 12, 12);
    w.started('b', 130, 130);
    assert.deepEqual(w.ended('a', 20, true), { turnaroundMs: 2, turnarounds: 1 });
    assert.deepEqual(w.ended('b', 140, true), { turnaroundMs: 30, turnarounds: 1 });
  });

  it('reports nothing of a run with a step through the server, and never a negative dispatch', () => {
    const w = new StepWaits();
    w.started('r', 0, 1);
    w.ended('r', 10, false);
    w.remote('r');
    w.started('r', 600, 601);
    assert.equal(w.ended('r', 610, true), undefined);
    assert.equal(w.started('s', 50, 49), 0);
  });
});
