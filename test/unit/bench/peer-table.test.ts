import assert from 'node:assert/strict';
import { peerTable, targetText, type PeerInput, type PeerRow, type PhaseFigures } from '../../../bench/peer-table';

/** Issue 31's side-by-side table: the ratios and marks, against figures worked by hand. */
const phase = (overheadP50Ms: number, overheadP99Ms: number, cpuMsPerCall: number, callsPerS: number, ok = true): PhaseFigures => ({
  ok,
  overheadP50Ms,
  overheadP99Ms,
  cpuMsPerCall,
  callsPerS,
});

const row = (rows: PeerRow[], label: string): PeerRow => {
  const found = rows.find((r) => r.label === label);
  assert.ok(found, `no row ${label} in ${rows.map((r) => r.label).join(' | ')}`);
  return found;
};

/** The issue's own figures: Quorum 74.7 ms overhead alone, 88.2 ms of CPU, 19.1 calls/s at 16; LiteLLM 12.3, 12.1, 104; the floor 15, 21, 85. */
const issueRun: PeerInput = {
  quorum: {
    express1: phase(74.7, 120, 88.2, 12),
    express16: phase(700, 1100, 60, 19.1),
    panelSlow16: phase(370, 1380, 150, 5),
    panelInstant16: phase(2000, 3000, 146, 6.9),
    memory: { peakMb: 1022, inFlight: 500, ok: true },
  },
  gateway: { one: phase(12.3, 20, 12.1, 70), sixteen: phase(120, 200, 12, 104) },
  floor: { one: phase(15, 25, 21, 60), sixteen: phase(150, 250, 20, 85) },
};

describe('bench: the peer table (Quorum against LiteLLM and the floor)', () => {
  it("computes Quorum / gateway and floor / gateway from the same run, and misses each of the issue's targets on its figures", () => {
    const rows = peerTable(issueRun);
    const overhead = row(rows, 'express overhead p50, one at a time');
    // 74.7 / 12.3 = 6.073…; the floor 15 / 12.3 = 1.219…
    assert.ok(Math.abs((overhead.ratio ?? 0) - 6.0732) < 1e-3, String(overhead.ratio));
    assert.ok(Math.abs((overhead.floorRatio ?? 0) - 1.2195) < 1e-3, String(overhead.floorRatio));
    assert.deepEqual([overhead.quorum, overhead.gateway, overhead.floor, overhead.mark], [74.7, 12.3, 15, 'miss']);
    const cpu = row(rows, 'express CPU per call (every process), one at a time');
    // 88.2 / 12.1 = 7.289…, the floor 21 / 12.1 = 1.735… (the issue's "about 1.75x")
    assert.ok(Math.abs((cpu.ratio ?? 0) - 7.2893) < 1e-3, String(cpu.ratio));
    assert.ok(Math.abs((cpu.floorRatio ?? 0) - 1.7355) < 1e-3, String(cpu.floorRatio));
    assert.equal(cpu.mark, 'miss');
    // 60 / 12 = 5 at 16 concurrent
    assert.equal(row(rows, 'express CPU per call (every process), 16 concurrent').ratio, 5);
    const rate = row(rows, 'express calls/s, 16 concurrent');
    // 19.1 / 104 = 0.1836…; the floor 85 / 104 = 0.817…
    assert.ok(Math.abs((rate.ratio ?? 0) - 0.18365) < 1e-4, String(rate.ratio));
    assert.equal(rate.mark, 'miss');
    assert.equal(row(rows, 'panel overhead p50, 16 concurrent, 500 ms engines').mark, 'miss');
    assert.equal(row(rows, 'panel overhead p99, 16 concurrent, 500 ms engines').mark, 'miss');
    assert.equal(row(rows, 'panels/s, 16 concurrent, instant engines').mark, 'miss');
    const memory = row(rows, 'API + worker resident, peak with 500 in flight');
    assert.deepEqual([memory.quorum, memory.gateway, memory.ratio, memory.mark], [1022, null, null, 'miss']);
    // Rows without a target carry figures and ratios but no mark.
    const p99 = row(rows, 'express overhead p99, one at a time');
    assert.deepEqual([p99.ratio, p99.target, p99.mark], [6, null, null]);
  });

  it('passes each target at its bound (≤ 2x, ≤ 3x, ≥ 0.5x, ≤ 100 and 250 ms, ≥ 30/s), misses it just outside; memory must be under 400 MB', () => {
    const at = (express1: PhaseFigures, express16: PhaseFigures, panelSlow16: PhaseFigures, panelInstant16: PhaseFigures, peakMb: number) =>
      peerTable({
        quorum: { express1, express16, panelSlow16, panelInstant16, memory: { peakMb, inFlight: 500, ok: true } },
        gateway: { one: phase(12.5, 20, 10, 50), sixteen: phase(100, 150, 10, 104) },
        floor: null,
      });
    // Exactly at each bound: 25 / 12.5 = 2, 30 / 10 = 3, 52 / 104 = 0.5, 100, 250, 30/s; 399 MB.
    const bound = at(phase(25, 40, 30, 20), phase(300, 500, 30, 52), phase(100, 250, 90, 8), phase(50, 90, 60, 30), 399);
    for (const r of bound) if (r.target) assert.equal(r.mark, 'pass', `${r.label}: ${r.quorum} / ${r.gateway}`);
    // Just outside: 25.2 / 12.5 = 2.016, 30.5 / 10 = 3.05, 51 / 104 = 0.49, 100.5, 251, 29.9/s, 400 MB (not under 400).
    const outside = at(phase(25.2, 40, 30.5, 20), phase(300, 500, 30.5, 51), phase(100.5, 251, 90, 8), phase(50, 90, 60, 29.9), 400);
    for (const r of outside) if (r.target) assert.equal(r.mark, 'miss', `${r.label}: ${r.quorum} / ${r.gateway}`);
    assert.equal(bound.filter((r) => r.target).length, 8);
  });

  it("marks a ratio read from a phase with failed calls 'errors', whichever side failed, but not for the floor's; a missing figure 'not run'", () => {
    const failing = peerTable({
      ...issueRun,
      gateway: { one: phase(12.3, 20, 12.1, 70, false), sixteen: phase(120, 200, 12, 104) },
      floor: { one: phase(15, 25, 21, 60, false), sixteen: phase(150, 250, 20, 85, false) },
    });
    assert.equal(row(failing, 'express overhead p50, one at a time').mark, 'errors');
    assert.equal(row(failing, 'express CPU per call (every process), one at a time').mark, 'errors');
    assert.equal(row(failing, 'express CPU per call (every process), 16 concurrent').mark, 'miss');
    const quorumFailing = peerTable({ ...issueRun, quorum: { ...issueRun.quorum, express16: phase(1, 1, 1, 1000, false) } });
    assert.equal(row(quorumFailing, 'express calls/s, 16 concurrent').mark, 'errors');
    const memoryFailing = peerTable({ ...issueRun, quorum: { ...issueRun.quorum, memory: { peakMb: 300, inFlight: 500, ok: false } } });
    assert.equal(row(memoryFailing, 'API + worker resident, peak with 500 in flight').mark, 'errors');

    const alone = peerTable({
      quorum: { express1: phase(40, 60, 30, 20), express16: null, panelSlow16: null, panelInstant16: null, memory: null },
      gateway: null,
      floor: null,
    });
    const overhead = row(alone, 'express overhead p50, one at a time');
    assert.deepEqual([overhead.quorum, overhead.gateway, overhead.ratio, overhead.mark], [40, null, null, 'not run']);
    for (const r of alone.filter((x) => x.target && x.label !== 'express overhead p50, one at a time'))
      assert.equal(r.mark, 'not run', r.label);
    // A gateway figure of 0 gives no ratio rather than Infinity.
    const zero = peerTable({ ...issueRun, gateway: { one: phase(0, 0, 12.1, 70), sixteen: null } });
    assert.equal(row(zero, 'express overhead p50, one at a time').ratio, null);
  });

  it('writes each target as the issue states it', () => {
    assert.equal(targetText({ kind: 'ratio', atMost: 2 }, 'ms'), '≤ 2x');
    assert.equal(targetText({ kind: 'ratio', atLeast: 0.5 }, 'calls/s'), '≥ 0.5x');
    assert.equal(targetText({ kind: 'absolute', atMost: 400, strict: true }, 'MB'), '< 400 MB');
    assert.equal(targetText({ kind: 'absolute', atLeast: 30 }, 'calls/s'), '≥ 30 calls/s');
    assert.equal(targetText(null, 'ms'), '');
  });
});
