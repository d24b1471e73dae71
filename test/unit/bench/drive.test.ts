import assert from 'node:assert/strict';
import { criticalPathMs, overheadParts } from '../../../bench/drive';

/** A call's overhead split along its timeline (issue 42 item 2), on hand-worked timelines. */
describe("bench: the engines' critical path and where the overhead lay", () => {
  // Sent at 0, answered at 1,700. Seats at 40–540, 45–545 and 60–540; the judge 560–1,060; synthesis 1,100–1,600.
  const intervals: [number, number][] = [
    [560, 1060],
    [40, 540],
    [45, 545],
    [60, 540],
    [1100, 1600],
  ];

  it("sums each stage's longest call", () => {
    assert.equal(criticalPathMs(intervals), 500 + 500 + 500);
    assert.equal(criticalPathMs([]), 0);
  });

  it('puts the overhead into head, gaps, stagger and tail, which add up to it', () => {
    const parts = overheadParts(0, 1700, intervals);
    // Seats' stage spans 40–545: 505 for a longest call of 500 (stagger 5); gaps 545→560 and 1,060→1,100.
    assert.deepEqual(parts, { headMs: 40, gapsMs: 15 + 40, staggerMs: 5, tailMs: 100 });
    const total = parts ? parts.headMs + parts.gapsMs + parts.staggerMs + parts.tailMs : NaN;
    assert.equal(total, 1700 - criticalPathMs(intervals));
    assert.equal(overheadParts(0, 10, []), null);
  });
});
