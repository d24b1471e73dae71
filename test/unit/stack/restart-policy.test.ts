import assert from 'node:assert/strict';
import { CrashHistory, RESTART_POLICY, type RestartVerdict } from '../../../stack/restart-policy';

/** Crashes at the given times (ms), each of a process that had run `ranMs`; the verdict of each. */
function crashes(times: number[], ranMs: number): RestartVerdict[] {
  const history = new CrashHistory(RESTART_POLICY);
  return times.map((t) => history.record(t, ranMs));
}

describe('the supervisor restart policy', () => {
  it('restarts after 0.5 s, doubling, and gives up at the fifth crash within a minute', () => {
    assert.deepEqual(crashes([0, 1_000, 3_000, 6_000, 11_000], 100), [
      { restart: true, delayMs: 500, crashesInWindow: 1 },
      { restart: true, delayMs: 1_000, crashesInWindow: 2 },
      { restart: true, delayMs: 2_000, crashesInWindow: 3 },
      { restart: true, delayMs: 4_000, crashesInWindow: 4 },
      { restart: false, crashesInWindow: 5 },
    ]);
  });

  it('caps the delay at 10 s and keeps restarting a process that crashes less often than that', () => {
    // A crash every 20 s: at most 3 in any minute, so never given up on; the streak goes on, so the delay grows.
    const verdicts = crashes([0, 20_000, 40_000, 60_000, 80_000, 100_000, 120_000], 15_000);
    assert.deepEqual(
      verdicts.map((v) => (v.restart ? v.delayMs : 'gave up')),
      [500, 1_000, 2_000, 4_000, 8_000, 10_000, 10_000],
    );
  });

  it('starts a new streak after a process ran a whole window: back to 0.5 s', () => {
    const history = new CrashHistory(RESTART_POLICY);
    history.record(0, 100);
    history.record(1_000, 100);
    assert.deepEqual(history.record(200_000, 150_000), { restart: true, delayMs: 500, crashesInWindow: 1 });
  });
});
