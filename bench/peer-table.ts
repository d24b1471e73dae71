/**
 * Issue 55's targets as one table: each of Quorum's figures against the same workflow shape with none of Quorum's code
 * (bench/shape-floor.ts: the express shape, the panel shape) on a dev server with npm start's settings in the same run,
 * with Temporal's floor (its one-activity workflow) and a plain gateway (LiteLLM's proxy) beside it as context; the
 * memory and the estimate against absolute bounds; a cluster target's CPU against the dev server's. Each row carries
 * the ratio its target is stated in and a pass or miss. Pure: the load bench hands in the figures, prints the rows and
 * writes them to JSON.
 */

/** One phase's figures as the table reads them; `ok` is false when any call in it failed (a figure of errors passes nothing). */
export interface PhaseFigures {
  ok: boolean;
  overheadP50Ms: number | null;
  overheadP99Ms: number | null;
  /** Summed over every process of the service. */
  cpuMsPerCall: number;
  callsPerS: number;
}

/** One target's phases the table reads. */
export interface QuorumFigures {
  /** Express with an instant engine, one at a time and 16 concurrent. */
  express1: PhaseFigures | null;
  express16: PhaseFigures | null;
  /** Panels at 16 concurrent with 500 ms engines, and with instant ones. */
  panelSlow16: PhaseFigures | null;
  panelInstant16: PhaseFigures | null;
  /** `/v1/estimate` one at a time (no engine, so its latency is its overhead). */
  estimate1: PhaseFigures | null;
  /** API + worker resident at peak with `inFlight` deliberations in flight; `ok` as a phase's. */
  memory: { peakMb: number; inFlight: number; ok: boolean } | null;
}

/** The phases a cluster row compares: express one at a time and panels at 16, instant engines (issue 42 item 5's). */
export type ClusterPhases = Pick<QuorumFigures, 'express1' | 'panelInstant16'>;

/** A cluster target of the run (BENCH_LOAD_TARGETS) and the dev target's figures from the same run (null: no dev target ran). */
export interface ClusterFigures {
  target: string;
  cluster: ClusterPhases;
  dev: ClusterPhases | null;
}

export interface PeerInput {
  quorum: QuorumFigures;
  /**
   * The shapes (bench/shape-floor.ts) in the same run: the express shape one at a time and at 16, the panel shape at 16
   * with instant and with 500 ms engines. Its overhead is its latency less its engines' critical path.
   */
  shape: {
    express1: PhaseFigures | null;
    express16: PhaseFigures | null;
    panelInstant16: PhaseFigures | null;
    panelSlow16: PhaseFigures | null;
  } | null;
  gateway: { one: PhaseFigures | null; sixteen: PhaseFigures | null } | null;
  /** The floor's eager-start phases; its engine answers at once, so its latency stands for its overhead. */
  floor: { one: PhaseFigures | null; sixteen: PhaseFigures | null } | null;
  /** The cluster targets this table compares with the dev server; empty when the run had none. */
  clusters: ClusterFigures[];
}

/**
 * What a row is held to: Quorum's figure over the shape's or the dev server's (from the same run) at most or at least
 * the bound, or Quorum's own figure under a bound.
 */
export type Target =
  | { kind: 'ratio'; against: 'shape' | 'dev'; atMost: number }
  | { kind: 'ratio'; against: 'shape' | 'dev'; atLeast: number }
  | { kind: 'absolute'; atMost: number };

export interface PeerRow {
  label: string;
  unit: 'ms' | 'calls/s' | 'MB';
  /** Quorum's figure (a cluster row's: the cluster's), then the other figures of that row, null where they have none. */
  quorum: number | null;
  shape: number | null;
  floor: number | null;
  gateway: number | null;
  dev: number | null;
  /** Quorum over the target's reference (the shape or the dev server), from the same run; null for an absolute target. */
  ratio: number | null;
  target: Target;
  /** 'pass' or 'miss'; 'errors' when a phase the mark reads had failed calls; 'not run' when a figure it reads is missing. */
  mark: 'pass' | 'miss' | 'errors' | 'not run';
}

const ratioOf = (a: number | null, b: number | null): number | null => (a === null || b === null || b === 0 ? null : a / b);

/** The phases a row reads its figures from; a missing one gives no figure. */
interface RowPhases {
  quorum: PhaseFigures | null;
  shape?: PhaseFigures | null;
  floor?: PhaseFigures | null;
  gateway?: PhaseFigures | null;
  dev?: PhaseFigures | null;
}

function rowOf(label: string, unit: PeerRow['unit'], phases: RowPhases, read: (f: PhaseFigures) => number | null, target: Target): PeerRow {
  const figure = (p: PhaseFigures | null | undefined): number | null => (p ? read(p) : null);
  const quorum = figure(phases.quorum);
  const reference = target.kind === 'ratio' ? phases[target.against] : undefined;
  const ratio = target.kind === 'ratio' ? ratioOf(quorum, figure(reference)) : null;
  // A ratio's mark needs both of its sides free of errors; the floor and the gateway stand beside it and void nothing.
  const ok = [phases.quorum, reference].every((p) => !p || p.ok);
  return {
    label,
    unit,
    quorum,
    shape: figure(phases.shape),
    floor: figure(phases.floor),
    gateway: figure(phases.gateway),
    dev: figure(phases.dev),
    ratio,
    target,
    mark: markOf(target, target.kind === 'ratio' ? ratio : quorum, ok),
  };
}

const atMostShape = (atMost: number): Target => ({ kind: 'ratio', against: 'shape', atMost });
const CLUSTER_TARGET: Target = { kind: 'ratio', against: 'dev', atMost: 1.3 };
const cpu = (f: PhaseFigures): number => f.cpuMsPerCall;
const rate = (f: PhaseFigures): number => f.callsPerS;

/** Issue 55's targets, each a row; the cluster's against the dev server is two rows (express, panels) a cluster target. */
export function peerTable(input: PeerInput): PeerRow[] {
  const { quorum, shape, gateway, floor } = input;
  const expressAlone = { quorum: quorum.express1, shape: shape?.express1, floor: floor?.one, gateway: gateway?.one };
  const rows = [
    rowOf('express overhead p50, one at a time', 'ms', expressAlone, (f) => f.overheadP50Ms, atMostShape(1.3)),
    rowOf('express CPU a call (every process), one at a time', 'ms', expressAlone, cpu, atMostShape(1.3)),
    rowOf(
      'express calls/s, 16 concurrent',
      'calls/s',
      { quorum: quorum.express16, shape: shape?.express16, floor: floor?.sixteen, gateway: gateway?.sixteen },
      rate,
      { kind: 'ratio', against: 'shape', atLeast: 0.8 },
    ),
    rowOf(
      'CPU a panel (every process), 16 concurrent, instant engines',
      'ms',
      { quorum: quorum.panelInstant16, shape: shape?.panelInstant16 },
      cpu,
      atMostShape(1.3),
    ),
    rowOf('panels/s, 16 concurrent, instant engines', 'calls/s', { quorum: quorum.panelInstant16, shape: shape?.panelInstant16 }, rate, {
      kind: 'ratio',
      against: 'shape',
      atLeast: 0.8,
    }),
    rowOf(
      'panel overhead p99, 16 concurrent, 500 ms engines',
      'ms',
      { quorum: quorum.panelSlow16, shape: shape?.panelSlow16 },
      (f) => f.overheadP99Ms,
      atMostShape(2),
    ),
  ];
  const memoryTarget: Target = { kind: 'absolute', atMost: 400 };
  const { memory } = quorum;
  rows.push({
    label: `API + worker resident, peak with ${memory?.inFlight ?? 500} in flight`,
    unit: 'MB',
    quorum: memory?.peakMb ?? null,
    shape: null,
    floor: null,
    gateway: null,
    dev: null,
    ratio: null,
    target: memoryTarget,
    mark: markOf(memoryTarget, memory?.peakMb ?? null, memory?.ok ?? true),
  });
  const clusterRows = (name: string, c: ClusterPhases | null, dev: ClusterPhases | null): PeerRow[] => [
    rowOf(
      `${name} over the dev server, express CPU a call, one at a time`,
      'ms',
      { quorum: c?.express1 ?? null, dev: dev?.express1 },
      cpu,
      CLUSTER_TARGET,
    ),
    rowOf(
      `${name} over the dev server, CPU a panel, 16 concurrent, instant engines`,
      'ms',
      { quorum: c?.panelInstant16 ?? null, dev: dev?.panelInstant16 },
      cpu,
      CLUSTER_TARGET,
    ),
  ];
  // With no cluster target in the run the cluster's rows stand, not run.
  const clusters = input.clusters.length > 0 ? input.clusters : [{ target: 'cluster', cluster: null, dev: null }];
  rows.push(...clusters.flatMap((c) => clusterRows(c.target, c.cluster, c.dev)));
  rows.push(
    rowOf('/v1/estimate p50, one at a time', 'ms', { quorum: quorum.estimate1 }, (f) => f.overheadP50Ms, { kind: 'absolute', atMost: 5 }),
  );
  return rows;
}

/** `value` is the ratio for a ratio target, Quorum's own figure otherwise. */
function markOf(target: Target, value: number | null, ok: boolean): PeerRow['mark'] {
  if (!ok) return 'errors';
  if (value === null) return 'not run';
  if ('atLeast' in target) return value >= target.atLeast ? 'pass' : 'miss';
  return value <= target.atMost ? 'pass' : 'miss';
}

/** How a target reads in the table: `≤ 1.3x shape`, `≥ 0.8x shape`, `≤ 1.3x dev`, `≤ 400 MB`. */
export function targetText(target: Target, unit: PeerRow['unit']): string {
  const suffix = target.kind === 'ratio' ? `x ${target.against}` : ` ${unit}`;
  if ('atLeast' in target) return `≥ ${target.atLeast}${suffix}`;
  return `≤ ${target.atMost}${suffix}`;
}
