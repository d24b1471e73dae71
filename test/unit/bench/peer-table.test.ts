import assert from 'node:assert/strict';
import { peerTable, targetText, type PeerInput, type PeerRow, type PhaseFigures } from '../../../bench/peer-table';

/** Issue 42's side-by-side table: the ratios and marks, against figures worked by hand. */
const phase = (overheadP50Ms: number, overheadP99Ms: number, cpuMsPerCall: number, callsPerS: number, ok = true): PhaseFigures => ({
  ok,
  overheadP50Ms,
  overheadP99Ms,
  cpuMsPerCall,
  callsPerS,
});

/** Every row of that label (the express overhead alone has two: against the floor and against the gateway). */
const rowsOf = (rows: PeerRow[], label: string): PeerRow[] => {
  const found = rows.filter((r) => r.label === label);
  assert.ok(found.length > 0, `no row ${label} in ${rows.map((r) => r.label).join(' | ')}`);
  return found;
};
const row = (rows: PeerRow[], label: string): PeerRow => rowsOf(rows, label)[0];
const against = (rows: PeerRow[], label: string, peer: 'gateway' | 'floor'): PeerRow => {
  const found = rowsOf(rows, label).find((r) => r.target?.kind === 'ratio' && r.target.against === peer);
  assert.ok(found, `no row ${label} against the ${peer}`);
  return found;
};

/**
 * The issue's own figures: Quorum 50.5 ms overhead alone, 64.3 ms of CPU, 35.9 calls/s at 16; the floor 14.1, 20.3,
 * 101.7; LiteLLM 11.6, 12.3, 104.4; panels p50 215 / p99 1,249 ms, 17.1/s at 90.7 ms CPU; 721 MB; estimate 15 ms.
 */
const issueRun: PeerInput = {
  quorum: {
    express1: phase(50.5, 90, 64.3, 18),
    express16: phase(400, 900, 40, 35.9),
    panelSlow16: phase(215, 1249, 150, 5),
    panelInstant16: phase(900, 1500, 90.7, 17.1),
    estimate1: phase(15, 30, 16, 60),
    memory: { peakMb: 721, inFlight: 500, ok: true },
  },
  gateway: { one: phase(11.6, 20, 12.3, 70), sixteen: phase(120, 200, 12, 104.4) },
  floor: { one: phase(14.1, 25, 20.3, 60), sixteen: phase(150, 250, 20, 101.7) },
};

describe('bench: the peer table (Quorum against LiteLLM and the floor)', () => {
  it("computes Quorum / gateway, Quorum / floor and floor / gateway from one run, and misses each of the issue's targets on its figures", () => {
    const rows = peerTable(issueRun);
    const label = 'express overhead p50, one at a time';
    const vsFloor = against(rows, label, 'floor');
    const vsGateway = against(rows, label, 'gateway');
    // 50.5 / 14.1 = 3.5815…; 50.5 / 11.6 = 4.3534…; the floor 14.1 / 11.6 = 1.2155…
    assert.ok(Math.abs((vsFloor.floorMultiple ?? 0) - 3.5816) < 1e-3, String(vsFloor.floorMultiple));
    assert.ok(Math.abs((vsGateway.ratio ?? 0) - 4.3534) < 1e-3, String(vsGateway.ratio));
    assert.ok(Math.abs((vsGateway.floorRatio ?? 0) - 1.2155) < 1e-3, String(vsGateway.floorRatio));
    assert.deepEqual([vsFloor.quorum, vsFloor.gateway, vsFloor.floor, vsFloor.mark, vsGateway.mark], [50.5, 11.6, 14.1, 'miss', 'miss']);
    const cpu = against(rows, 'express CPU per call (every process), one at a time', 'floor');
    // 64.3 / 20.3 = 3.1674…, the issue's "about three times Temporal's own floor"
    assert.ok(Math.abs((cpu.floorMultiple ?? 0) - 3.1675) < 1e-3, String(cpu.floorMultiple));
    assert.equal(cpu.mark, 'miss');
    const rate = against(rows, 'express calls/s, 16 concurrent', 'floor');
    // 35.9 / 101.7 = 0.353…
    assert.ok(Math.abs((rate.floorMultiple ?? 0) - 0.353) < 1e-3, String(rate.floorMultiple));
    assert.equal(rate.mark, 'miss');
    for (const l of [
      'panel overhead p50, 16 concurrent, 500 ms engines',
      'panel overhead p99, 16 concurrent, 500 ms engines',
      'panels/s, 16 concurrent, instant engines',
      'panel CPU (every process), 16 concurrent, instant engines',
      '/v1/estimate p50, one at a time',
      'API + worker resident, peak with 500 in flight',
    ])
      assert.equal(row(rows, l).mark, 'miss', l);
    // Rows without a target carry figures and ratios but no mark.
    const p99 = row(rows, 'express overhead p99, one at a time');
    assert.deepEqual([p99.target, p99.mark], [null, null]);
    assert.ok(Math.abs((p99.floorMultiple ?? 0) - 3.6) < 1e-9, String(p99.floorMultiple));
  });

  it('passes each target at its bound (≤ 1.5x and ≤ 2x, ≥ 0.7x, ≤ 100 and 250 ms, ≥ 50/s, ≤ 40 ms, ≤ 5 ms, ≤ 400 MB), misses it just outside', () => {
    const at = (quorum: Omit<PeerInput['quorum'], 'memory'>, peakMb: number): PeerRow[] =>
      peerTable({
        quorum: { ...quorum, memory: { peakMb, inFlight: 500, ok: true } },
        gateway: { one: phase(12.5, 20, 10, 50), sixteen: phase(100, 150, 10, 104) },
        floor: { one: phase(10, 20, 20, 50), sixteen: phase(100, 150, 10, 100) },
      });
    // Exactly at each bound: 15 / 10 = 1.5 and 15 / 12.5 = 1.2 (≤ 2), 30 / 20 = 1.5, 70 / 100 = 0.7, 100 and 250 ms,
    // 50/s at 40 ms, an estimate of 5 ms, 400 MB.
    const bound = at(
      {
        express1: phase(15, 40, 30, 20),
        express16: phase(300, 500, 30, 70),
        panelSlow16: phase(100, 250, 90, 8),
        panelInstant16: phase(50, 90, 40, 50),
        estimate1: phase(5, 9, 4, 200),
      },
      400,
    );
    for (const r of bound) if (r.target) assert.equal(r.mark, 'pass', `${r.label} ${targetText(r.target, r.unit)}: ${r.quorum}`);
    assert.equal(bound.filter((r) => r.target).length, 10);
    // Just outside: 15.1 / 10 = 1.51, 25.1 / 12.5 = 2.008 (the floor's row then misses too), 30.2 / 20 = 1.51,
    // 69.9 / 100 = 0.699, 100.1, 251, 49.9/s, 40.1 ms, 5.1 ms, 401 MB.
    const outside = at(
      {
        express1: phase(25.1, 40, 30.2, 20),
        express16: phase(300, 500, 30, 69.9),
        panelSlow16: phase(100.1, 251, 90, 8),
        panelInstant16: phase(50, 90, 40.1, 49.9),
        estimate1: phase(5.1, 9, 4, 200),
      },
      401,
    );
    for (const r of outside) if (r.target) assert.equal(r.mark, 'miss', `${r.label} ${targetText(r.target, r.unit)}: ${r.quorum}`);
    // 15.1 ms misses the floor's 1.5x and passes the gateway's 2x (15.1 / 12.5 = 1.208): the two rows are apart.
    const split = at({ express1: phase(15.1, 40, 30, 20), express16: null, panelSlow16: null, panelInstant16: null, estimate1: null }, 300);
    const label = 'express overhead p50, one at a time';
    assert.deepEqual([against(split, label, 'floor').mark, against(split, label, 'gateway').mark], ['miss', 'pass']);
  });

  it("marks a ratio read from a phase with failed calls 'errors', when it is one of the ratio's sides; a missing figure 'not run'", () => {
    const label = 'express overhead p50, one at a time';
    // The gateway failed: its ratio row is errors, the floor's row stands on its own figures.
    const gatewayFailing = peerTable({
      ...issueRun,
      gateway: { one: phase(11.6, 20, 12.3, 70, false), sixteen: issueRun.gateway?.sixteen ?? null },
    });
    assert.equal(against(gatewayFailing, label, 'gateway').mark, 'errors');
    assert.equal(against(gatewayFailing, label, 'floor').mark, 'miss');
    // The floor failed: the floor's rows are errors.
    const floorFailing = peerTable({
      ...issueRun,
      floor: { one: phase(14.1, 25, 20.3, 60, false), sixteen: phase(150, 250, 20, 101.7, false) },
    });
    assert.equal(against(floorFailing, label, 'floor').mark, 'errors');
    assert.equal(against(floorFailing, 'express calls/s, 16 concurrent', 'floor').mark, 'errors');
    assert.equal(against(floorFailing, label, 'gateway').mark, 'miss');
    const quorumFailing = peerTable({ ...issueRun, quorum: { ...issueRun.quorum, express16: phase(1, 1, 1, 1000, false) } });
    assert.equal(against(quorumFailing, 'express calls/s, 16 concurrent', 'floor').mark, 'errors');
    const memoryFailing = peerTable({ ...issueRun, quorum: { ...issueRun.quorum, memory: { peakMb: 300, inFlight: 500, ok: false } } });
    assert.equal(row(memoryFailing, 'API + worker resident, peak with 500 in flight').mark, 'errors');

    const alone = peerTable({
      quorum: { express1: phase(40, 60, 30, 20), express16: null, panelSlow16: null, panelInstant16: null, estimate1: null, memory: null },
      gateway: null,
      floor: null,
    });
    const overhead = against(alone, label, 'gateway');
    assert.deepEqual([overhead.quorum, overhead.gateway, overhead.ratio, overhead.mark], [40, null, null, 'not run']);
    for (const r of alone.filter((x) => x.target)) assert.equal(r.mark, 'not run', r.label);
    // A peer's figure of 0 gives no ratio rather than Infinity.
    const zero = peerTable({
      ...issueRun,
      gateway: { one: phase(0, 0, 12.3, 70), sixteen: null },
      floor: { one: phase(0, 0, 20, 60), sixteen: null },
    });
    assert.deepEqual([against(zero, label, 'gateway').ratio, against(zero, label, 'floor').floorMultiple], [null, null]);
  });

  it('writes each target as the issue states it', () => {
    assert.equal(targetText({ kind: 'ratio', against: 'floor', atMost: 1.5 }, 'ms'), '≤ 1.5x floor');
    assert.equal(targetText({ kind: 'ratio', against: 'gateway', atMost: 2 }, 'ms'), '≤ 2x gateway');
    assert.equal(targetText({ kind: 'ratio', against: 'floor', atLeast: 0.7 }, 'calls/s'), '≥ 0.7x floor');
    assert.equal(targetText({ kind: 'absolute', atMost: 400 }, 'MB'), '≤ 400 MB');
    assert.equal(targetText({ kind: 'absolute', atLeast: 50 }, 'calls/s'), '≥ 50 calls/s');
    assert.equal(targetText(null, 'ms'), '');
  });
});
