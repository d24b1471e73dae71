/**
 * Issue 42's targets as one table: Quorum's figure beside a plain gateway's (LiteLLM's proxy) and Temporal's floor
 * (the smallest durable call on the same dev server) measured in the same run, and the ratios the targets are stated
 * in, each with a pass or miss. Pure: the load bench hands in the figures, prints the rows and writes them to JSON.
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

export interface PeerInput {
  quorum: {
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
  };
  gateway: { one: PhaseFigures | null; sixteen: PhaseFigures | null } | null;
  /** The floor's eager-start phases; its engine answers at once, so its latency stands for its overhead. */
  floor: { one: PhaseFigures | null; sixteen: PhaseFigures | null } | null;
}

/**
 * What a row is held to: Quorum's figure over the gateway's or the floor's (from the same run) at most or at least
 * `limit`, or Quorum's own figure under or over a bound.
 */
export type Target =
  | { kind: 'ratio'; against: 'gateway' | 'floor'; atMost: number }
  | { kind: 'ratio'; against: 'gateway' | 'floor'; atLeast: number }
  | { kind: 'absolute'; atMost: number }
  | { kind: 'absolute'; atLeast: number };

export interface PeerRow {
  label: string;
  unit: 'ms' | 'calls/s' | 'MB';
  quorum: number | null;
  gateway: number | null;
  floor: number | null;
  /** Quorum / gateway, Quorum / floor and floor / gateway, from the same run. */
  ratio: number | null;
  floorMultiple: number | null;
  floorRatio: number | null;
  target: Target | null;
  /** 'pass' or 'miss' against the target; 'errors' when a phase the row reads had failed calls; 'not run' when a figure is missing. */
  mark: 'pass' | 'miss' | 'errors' | 'not run' | null;
}

const ratioOf = (a: number | null, b: number | null): number | null => (a === null || b === null || b === 0 ? null : a / b);

type Side = 'one' | 'sixteen';

/** Issue 42's targets, each a row; a figure held to two targets (the floor's and the gateway's) is two rows. */
export function peerTable(input: PeerInput): PeerRow[] {
  const { quorum, gateway, floor } = input;
  const rows: PeerRow[] = [];
  const add = (
    label: string,
    unit: PeerRow['unit'],
    figures: { quorum: PhaseFigures | null; gateway?: PhaseFigures | null; floor?: PhaseFigures | null },
    read: (f: PhaseFigures) => number | null,
    target: Target | null,
  ): void => {
    const q = figures.quorum ? read(figures.quorum) : null;
    const g = figures.gateway ? read(figures.gateway) : null;
    const fl = figures.floor ? read(figures.floor) : null;
    const ratio = ratioOf(q, g);
    const floorMultiple = ratioOf(q, fl);
    // A ratio's mark needs both of its sides free of errors; the other peer stands beside it and does not void it.
    const counted =
      target?.kind === 'ratio' ? [figures.quorum, target.against === 'gateway' ? figures.gateway : figures.floor] : [figures.quorum];
    const ok = counted.every((f) => !f || f.ok);
    const value = target?.kind === 'ratio' ? (target.against === 'gateway' ? ratio : floorMultiple) : q;
    rows.push({
      label,
      unit,
      quorum: q,
      gateway: g,
      floor: fl,
      ratio,
      floorMultiple,
      floorRatio: ratioOf(fl, g),
      target,
      mark: markOf(target, value, ok),
    });
  };
  const peers = (side: Side): { gateway: PhaseFigures | null; floor: PhaseFigures | null } => ({
    gateway: gateway?.[side] ?? null,
    floor: floor?.[side] ?? null,
  });
  const express = (side: Side): PhaseFigures | null => (side === 'one' ? quorum.express1 : quorum.express16);
  const at = (side: Side): string => (side === 'one' ? 'one at a time' : '16 concurrent');

  const overheadAlone = 'express overhead p50, one at a time';
  add(overheadAlone, 'ms', { quorum: quorum.express1, ...peers('one') }, (f) => f.overheadP50Ms, {
    kind: 'ratio',
    against: 'floor',
    atMost: 1.5,
  });
  add(overheadAlone, 'ms', { quorum: quorum.express1, ...peers('one') }, (f) => f.overheadP50Ms, {
    kind: 'ratio',
    against: 'gateway',
    atMost: 2,
  });
  add('express overhead p50, 16 concurrent', 'ms', { quorum: quorum.express16, ...peers('sixteen') }, (f) => f.overheadP50Ms, null);
  for (const side of ['one', 'sixteen'] as const)
    add(`express overhead p99, ${at(side)}`, 'ms', { quorum: express(side), ...peers(side) }, (f) => f.overheadP99Ms, null);
  for (const side of ['one', 'sixteen'] as const)
    add(
      `express CPU per call (every process), ${at(side)}`,
      'ms',
      { quorum: express(side), ...peers(side) },
      (f) => f.cpuMsPerCall,
      side === 'one' ? { kind: 'ratio', against: 'floor', atMost: 1.5 } : null,
    );
  add('express calls/s, 16 concurrent', 'calls/s', { quorum: quorum.express16, ...peers('sixteen') }, (f) => f.callsPerS, {
    kind: 'ratio',
    against: 'floor',
    atLeast: 0.7,
  });
  add('panel overhead p50, 16 concurrent, 500 ms engines', 'ms', { quorum: quorum.panelSlow16 }, (f) => f.overheadP50Ms, {
    kind: 'absolute',
    atMost: 100,
  });
  add('panel overhead p99, 16 concurrent, 500 ms engines', 'ms', { quorum: quorum.panelSlow16 }, (f) => f.overheadP99Ms, {
    kind: 'absolute',
    atMost: 250,
  });
  add('panels/s, 16 concurrent, instant engines', 'calls/s', { quorum: quorum.panelInstant16 }, (f) => f.callsPerS, {
    kind: 'absolute',
    atLeast: 50,
  });
  add('panel CPU (every process), 16 concurrent, instant engines', 'ms', { quorum: quorum.panelInstant16 }, (f) => f.cpuMsPerCall, {
    kind: 'absolute',
    atMost: 40,
  });
  add('/v1/estimate p50, one at a time', 'ms', { quorum: quorum.estimate1 }, (f) => f.overheadP50Ms, { kind: 'absolute', atMost: 5 });
  const memoryTarget: Target = { kind: 'absolute', atMost: 400 };
  const { memory } = quorum;
  rows.push({
    label: `API + worker resident, peak with ${memory?.inFlight ?? 500} in flight`,
    unit: 'MB',
    quorum: memory?.peakMb ?? null,
    gateway: null,
    floor: null,
    ratio: null,
    floorMultiple: null,
    floorRatio: null,
    target: memoryTarget,
    mark: markOf(memoryTarget, memory?.peakMb ?? null, memory?.ok ?? true),
  });
  return rows;
}

/** `value` is the ratio for a ratio target, Quorum's own figure otherwise. */
function markOf(target: Target | null, value: number | null, ok: boolean): PeerRow['mark'] {
  if (target === null) return null;
  if (!ok) return 'errors';
  if (value === null) return 'not run';
  if ('atLeast' in target) return value >= target.atLeast ? 'pass' : 'miss';
  return value <= target.atMost ? 'pass' : 'miss';
}

/** How a target reads in the table: `≤ 1.5x floor`, `≤ 2x gateway`, `≥ 50 calls/s`. */
export function targetText(target: Target | null, unit: PeerRow['unit']): string {
  if (target === null) return '';
  const suffix = target.kind === 'ratio' ? `x ${target.against}` : ` ${unit}`;
  if ('atLeast' in target) return `≥ ${target.atLeast}${suffix}`;
  return `≤ ${target.atMost}${suffix}`;
}
