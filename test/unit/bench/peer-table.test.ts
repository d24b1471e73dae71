import assert from 'node:assert/strict';
import {
  peerTable,
  targetText,
  type ClusterFigures,
  type PeerInput,
  type PeerRow,
  type PhaseFigures,
  type QuorumFigures,
} from '../../../bench/peer-table';

/** Issue 55's table: Quorum over its shape, the floor and LiteLLM beside it, against figures worked by hand. */
const phase = (overheadP50Ms: number, overheadP99Ms: number, cpuMsPerCall: number, callsPerS: number, ok = true): PhaseFigures => ({
  ok,
  overheadP50Ms,
  overheadP99Ms,
  cpuMsPerCall,
  callsPerS,
});

const LABELS = {
  overhead: 'express overhead p50, one at a time',
  cpu: 'express CPU a call (every process), one at a time',
  rate: 'express calls/s, 16 concurrent',
  panelCpu: 'CPU a panel (every process), 16 concurrent, instant engines',
  panelRate: 'panels/s, 16 concurrent, instant engines',
  panelTail: 'panel overhead p99, 16 concurrent, 500 ms engines',
  memory: 'API + worker resident, peak with 500 in flight',
  estimate: '/v1/estimate p50, one at a time',
} as const;

const row = (rows: PeerRow[], label: string): PeerRow => {
  const found = rows.find((r) => r.label === label);
  assert.ok(found, `no row ${label} in ${rows.map((r) => r.label).join(' | ')}`);
  return found;
};
const near = (actual: number | null, expected: number): void =>
  assert.ok(actual !== null && Math.abs(actual - expected) < 1e-9, `${String(actual)} is not ${expected}`);

/**
 * A run that misses most targets: express overhead 30 / 20 = 1.5x its shape, CPU 40 / 25 = 1.6x, 40 / 80 = 0.5x its
 * rate; a panel's CPU 60 / 40 = 1.5x, its rate 20 / 30 = 0.667x; the slow panels' p99 400 / 250 = 1.6x (within 2x); the
 * estimate 3 ms and 380 MB within their bounds.
 */
const quorum: QuorumFigures = {
  express1: phase(30, 90, 40, 18),
  express16: phase(300, 900, 35, 40),
  panelSlow16: phase(150, 400, 70, 5),
  panelInstant16: phase(800, 1500, 60, 20),
  estimate1: phase(3, 9, 2, 300),
  memory: { peakMb: 380, inFlight: 500, ok: true },
};
const run: PeerInput = {
  quorum,
  shape: {
    express1: phase(20, 40, 25, 45),
    express16: phase(150, 300, 20, 80),
    panelInstant16: phase(500, 900, 40, 30),
    panelSlow16: phase(100, 250, 45, 6),
  },
  floor: { one: phase(15, 30, 20, 60), sixteen: phase(140, 250, 18, 100) },
  gateway: { one: phase(12, 20, 12, 70), sixteen: phase(120, 200, 11, 104) },
  clusters: [],
};

describe('bench: the peer table (Quorum against its shape, the floor and LiteLLM beside it)', () => {
  it("holds each of issue 55's targets in its order, with the figures that exist for it and the ratio against the shape", () => {
    const rows = peerTable(run);
    assert.deepEqual(
      rows.map((r) => [r.label, targetText(r.target, r.unit), r.mark]),
      [
        [LABELS.overhead, '≤ 1.3x shape', 'miss'],
        [LABELS.cpu, '≤ 1.3x shape', 'miss'],
        [LABELS.rate, '≥ 0.8x shape', 'miss'],
        [LABELS.panelCpu, '≤ 1.3x shape', 'miss'],
        [LABELS.panelRate, '≥ 0.8x shape', 'miss'],
        [LABELS.panelTail, '≤ 2x shape', 'pass'],
        [LABELS.memory, '≤ 400 MB', 'pass'],
        ['cluster over the dev server, express CPU a call, one at a time', '≤ 1.3x dev', 'not run'],
        ['cluster over the dev server, CPU a panel, 16 concurrent, instant engines', '≤ 1.3x dev', 'not run'],
        [LABELS.estimate, '≤ 5 ms', 'pass'],
      ],
    );
    const overhead = row(rows, LABELS.overhead);
    assert.deepEqual(
      [overhead.quorum, overhead.shape, overhead.floor, overhead.gateway, overhead.dev, overhead.unit],
      [30, 20, 15, 12, null, 'ms'],
    );
    near(overhead.ratio, 1.5);
    const cpu = row(rows, LABELS.cpu);
    assert.deepEqual([cpu.quorum, cpu.shape, cpu.floor, cpu.gateway], [40, 25, 20, 12]);
    near(cpu.ratio, 1.6);
    // The rate at 16 reads the 16-concurrent phases of each: Quorum 40, the shape 80, the floor 100, LiteLLM 104.
    const rate = row(rows, LABELS.rate);
    assert.deepEqual([rate.quorum, rate.shape, rate.floor, rate.gateway, rate.unit], [40, 80, 100, 104, 'calls/s']);
    near(rate.ratio, 0.5);
    // No floor or gateway runs a panel: the panel rows have the shape alone beside Quorum.
    const panelRate = row(rows, LABELS.panelRate);
    assert.deepEqual([panelRate.quorum, panelRate.shape, panelRate.floor, panelRate.gateway], [20, 30, null, null]);
    near(panelRate.ratio, 20 / 30);
    near(row(rows, LABELS.panelCpu).ratio, 1.5);
    const tail = row(rows, LABELS.panelTail);
    assert.deepEqual([tail.quorum, tail.shape], [400, 250]);
    near(tail.ratio, 1.6);
    // Absolute targets carry Quorum's figure and no ratio.
    const estimate = row(rows, LABELS.estimate);
    assert.deepEqual([estimate.quorum, estimate.ratio, estimate.shape], [3, null, null]);
    assert.deepEqual([row(rows, LABELS.memory).quorum, row(rows, LABELS.memory).ratio], [380, null]);
  });

  it('passes each target at its bound (1.3x, 0.8x, 2x, 400 MB, 5 ms), misses it just outside (1.31x, 0.799x, 2.01x, 401 MB, 5.1 ms)', () => {
    const cluster = (express: number, panel: number): ClusterFigures => ({
      target: 'cluster-1w',
      cluster: { express1: phase(40, 80, express, 20), panelInstant16: phase(500, 900, panel, 20) },
      dev: { express1: phase(30, 60, 50, 25), panelInstant16: phase(400, 800, 100, 25) },
    });
    const at = (q: QuorumFigures, c: ClusterFigures): PeerRow[] => peerTable({ ...run, quorum: q, clusters: [c] });
    // Exactly at each bound: 26 / 20 = 1.3, 32.5 / 25 = 1.3, 64 / 80 = 0.8, 52 / 40 = 1.3, 24 / 30 = 0.8,
    // 500 / 250 = 2, 400 MB, 5 ms; the cluster 65 / 50 = 1.3 and 130 / 100 = 1.3.
    const bound = at(
      {
        express1: phase(26, 90, 32.5, 18),
        express16: phase(300, 900, 35, 64),
        panelInstant16: phase(800, 1500, 52, 24),
        panelSlow16: phase(150, 500, 70, 5),
        estimate1: phase(5, 9, 2, 300),
        memory: { peakMb: 400, inFlight: 500, ok: true },
      },
      cluster(65, 130),
    );
    assert.equal(bound.length, 10);
    for (const r of bound) assert.equal(r.mark, 'pass', `${r.label} ${targetText(r.target, r.unit)}: ${r.quorum} (${r.ratio})`);
    // Just outside: 26.2 / 20 = 1.31, 32.75 / 25 = 1.31, 63.9 / 80 = 0.79875, 52.4 / 40 = 1.31, 23.9 / 30 = 0.7967,
    // 502.5 / 250 = 2.01, 401 MB, 5.1 ms; the cluster 65.5 / 50 = 1.31 and 131 / 100 = 1.31.
    const outside = at(
      {
        express1: phase(26.2, 90, 32.75, 18),
        express16: phase(300, 900, 35, 63.9),
        panelInstant16: phase(800, 1500, 52.4, 23.9),
        panelSlow16: phase(150, 502.5, 70, 5),
        estimate1: phase(5.1, 9, 2, 300),
        memory: { peakMb: 401, inFlight: 500, ok: true },
      },
      cluster(65.5, 131),
    );
    for (const r of outside) assert.equal(r.mark, 'miss', `${r.label} ${targetText(r.target, r.unit)}: ${r.quorum} (${r.ratio})`);
    const clusterCpu = row(outside, 'cluster-1w over the dev server, express CPU a call, one at a time');
    assert.deepEqual([clusterCpu.quorum, clusterCpu.dev, clusterCpu.shape], [65.5, 50, null]);
    near(clusterCpu.ratio, 1.31);
  });

  it("marks a ratio 'errors' when Quorum's phase or the shape's had failed calls; the floor's or LiteLLM's errors void nothing", () => {
    const quorumFailing = peerTable({ ...run, quorum: { ...quorum, express16: phase(300, 900, 35, 1000, false) } });
    assert.equal(row(quorumFailing, LABELS.rate).mark, 'errors');
    assert.equal(row(quorumFailing, LABELS.overhead).mark, 'miss');
    const shapeFailing = peerTable({ ...run, shape: run.shape && { ...run.shape, panelSlow16: phase(100, 250, 45, 6, false) } });
    assert.equal(row(shapeFailing, LABELS.panelTail).mark, 'errors');
    // 30 / 20 = 1.5 misses whatever the context: a failed floor or gateway stands beside the row, it is not its reference.
    const contextFailing = peerTable({
      ...run,
      floor: { one: phase(15, 30, 20, 60, false), sixteen: null },
      gateway: { one: phase(12, 20, 12, 70, false), sixteen: null },
    });
    assert.equal(row(contextFailing, LABELS.overhead).mark, 'miss');
    const memoryFailing = peerTable({ ...run, quorum: { ...quorum, memory: { peakMb: 300, inFlight: 500, ok: false } } });
    assert.equal(row(memoryFailing, LABELS.memory).mark, 'errors');
    const estimateFailing = peerTable({ ...run, quorum: { ...quorum, estimate1: phase(3, 9, 2, 300, false) } });
    assert.equal(row(estimateFailing, LABELS.estimate).mark, 'errors');
    const devFailing = peerTable({
      ...run,
      clusters: [
        {
          target: 'cluster-2w',
          cluster: { express1: phase(40, 80, 50, 20), panelInstant16: null },
          dev: { express1: phase(30, 60, 50, 25, false), panelInstant16: null },
        },
      ],
    });
    assert.equal(row(devFailing, 'cluster-2w over the dev server, express CPU a call, one at a time').mark, 'errors');
    assert.equal(row(devFailing, 'cluster-2w over the dev server, CPU a panel, 16 concurrent, instant engines').mark, 'not run');
  });

  it("marks 'not run' where the shape, Quorum's phase or the dev server is missing, or the reference is 0", () => {
    // No shape (BENCH_LOAD_PEERS=off, or its run failed): every ratio row is not run, the absolute ones still count.
    const noShape = peerTable({ ...run, shape: null, floor: null, gateway: null });
    for (const label of [LABELS.overhead, LABELS.cpu, LABELS.rate, LABELS.panelCpu, LABELS.panelRate, LABELS.panelTail]) {
      const r = row(noShape, label);
      assert.deepEqual([r.mark, r.shape, r.floor, r.gateway, r.ratio], ['not run', null, null, null, null], label);
    }
    assert.deepEqual([row(noShape, LABELS.memory).mark, row(noShape, LABELS.estimate).mark], ['pass', 'pass']);
    // The shape's 500 ms phase alone missing: that row alone is not run.
    const noSlowShape = peerTable({ ...run, shape: run.shape && { ...run.shape, panelSlow16: null } });
    assert.equal(row(noSlowShape, LABELS.panelTail).mark, 'not run');
    assert.equal(row(noSlowShape, LABELS.panelCpu).mark, 'miss');
    // Quorum's phases not run (BENCH_LOAD_ONLY): the shape's figure stands, with no ratio.
    const expressOnly = peerTable({
      ...run,
      quorum: {
        express1: phase(26, 90, 32.5, 18),
        express16: null,
        panelSlow16: null,
        panelInstant16: null,
        estimate1: null,
        memory: null,
      },
    });
    assert.deepEqual(
      expressOnly.map((r) => r.mark),
      ['pass', 'pass', 'not run', 'not run', 'not run', 'not run', 'not run', 'not run', 'not run', 'not run'],
    );
    assert.deepEqual([row(expressOnly, LABELS.rate).shape, row(expressOnly, LABELS.rate).ratio], [80, null]);
    // A cluster target with no dev target in the run.
    const noDev = peerTable({
      ...run,
      clusters: [
        { target: 'cluster-1w', cluster: { express1: phase(40, 80, 50, 20), panelInstant16: phase(500, 900, 90, 20) }, dev: null },
      ],
    });
    const clusterCpu = row(noDev, 'cluster-1w over the dev server, express CPU a call, one at a time');
    assert.deepEqual([clusterCpu.quorum, clusterCpu.dev, clusterCpu.ratio, clusterCpu.mark], [50, null, null, 'not run']);
    // A reference of 0 gives no ratio rather than Infinity.
    const zero = peerTable({ ...run, shape: run.shape && { ...run.shape, express1: phase(0, 0, 25, 45) } });
    assert.deepEqual([row(zero, LABELS.overhead).ratio, row(zero, LABELS.overhead).mark], [null, 'not run']);
  });

  it('gives each cluster target of the run its two rows against the dev server', () => {
    const dev = { express1: phase(30, 60, 50, 25), panelInstant16: phase(400, 800, 100, 25) };
    const rows = peerTable({
      ...run,
      clusters: [
        { target: 'cluster-1w', cluster: { express1: phase(40, 80, 60, 20), panelInstant16: phase(500, 900, 140, 20) }, dev },
        { target: 'cluster-2w', cluster: { express1: phase(40, 80, 55, 20), panelInstant16: phase(500, 900, 120, 20) }, dev },
      ],
    });
    // 60 / 50 = 1.2 and 140 / 100 = 1.4; 55 / 50 = 1.1 and 120 / 100 = 1.2.
    const clusterRows = rows.filter((r) => r.target.kind === 'ratio' && r.target.against === 'dev');
    assert.deepEqual(
      clusterRows.map((r) => [r.label, r.quorum, r.dev, r.mark]),
      [
        ['cluster-1w over the dev server, express CPU a call, one at a time', 60, 50, 'pass'],
        ['cluster-1w over the dev server, CPU a panel, 16 concurrent, instant engines', 140, 100, 'miss'],
        ['cluster-2w over the dev server, express CPU a call, one at a time', 55, 50, 'pass'],
        ['cluster-2w over the dev server, CPU a panel, 16 concurrent, instant engines', 120, 100, 'pass'],
      ],
    );
    for (const [r, expected] of clusterRows.map((r, i) => [r, [1.2, 1.4, 1.1, 1.2][i]] as const)) near(r.ratio, expected);
  });

  it('writes each target as the issue states it', () => {
    assert.equal(targetText({ kind: 'ratio', against: 'shape', atMost: 1.3 }, 'ms'), '≤ 1.3x shape');
    assert.equal(targetText({ kind: 'ratio', against: 'shape', atLeast: 0.8 }, 'calls/s'), '≥ 0.8x shape');
    assert.equal(targetText({ kind: 'ratio', against: 'dev', atMost: 1.3 }, 'ms'), '≤ 1.3x dev');
    assert.equal(targetText({ kind: 'absolute', atMost: 400 }, 'MB'), '≤ 400 MB');
    assert.equal(targetText({ kind: 'absolute', atMost: 5 }, 'ms'), '≤ 5 ms');
  });
});
