import assert from 'node:assert/strict';
import { runTiming, type RunProgress } from '../../../domain/runs';

/** Elapsed and time left, as the API's poll, the CLI's watch and the console's run page show them. */

const progress = (done: number, startedAt: string | null): RunProgress => ({
  state: 'running',
  done: { light: done, medium: 0, hard: 0 },
  total: { light: 4, medium: 4, hard: 2 },
  failed: 0,
  startedAt,
  updatedAt: '2026-01-01T00:00:00.000Z',
});
const start = '2026-01-01T00:00:00.000Z';
const at = (seconds: number): number => Date.parse(start) + seconds * 1_000;

describe('run timing', () => {
  it('before the first answer, the launch estimate is what is left', () => {
    assert.deepEqual(runTiming({ progress: progress(0, null), finishedAt: null, estimatedMinutes: 3 }, at(5)), {
      elapsedMs: 0,
      leftMs: 180_000,
    });
    assert.deepEqual(runTiming({ progress: progress(0, start), finishedAt: null, estimatedMinutes: 3 }, at(5)), {
      elapsedMs: 5_000,
      leftMs: 180_000,
    });
  });

  it('then the pace so far predicts the rest', () => {
    assert.deepEqual(runTiming({ progress: progress(2, start), finishedAt: null, estimatedMinutes: 3 }, at(10)), {
      elapsedMs: 10_000,
      leftMs: 40_000,
    });
  });

  it('an ended run took until it finished and has nothing left', () => {
    assert.deepEqual(runTiming({ progress: progress(4, start), finishedAt: new Date(at(30)), estimatedMinutes: 3 }, at(99)), {
      elapsedMs: 30_000,
      leftMs: 0,
    });
  });
});
