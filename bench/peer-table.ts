/**
 * Issue 31's targets as one table: Quorum's figure beside a plain gateway's (LiteLLM's proxy) and Temporal's floor
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
    /** API + worker resident at peak with `inFlight` deliberations in flight; `ok` as a phase's. */
    memory: { peakMb: number; inFlight: number; ok: boolean } | null;
  };
  gateway: { one: PhaseFigures | null; sixteen: PhaseFigures | null } | null;
  /** The floor's eager-start phases; its engine answers at once, so its latency stands for its overhead. */
  floor: { one: PhaseFigures | null; sixteen: PhaseFigures | null } | null;
}

/** What a row is held to: Quorum / gateway at most or at least `limit`, or Quorum's own figure under or over it. */
export type Target =
  | { kind: 'ratio'; atMost: number }
  | { kind: 'ratio'; atLeast: number }
  | { kind: 'absolute'; atMost: number; strict?: boolean }
  | { kind: 'absolute'; atLeast: number };

export interface PeerRow {
  label: string;
  unit: 'ms' | 'calls/s' | 'MB';
  quorum: number | null;
  gateway: number | null;
  floor: number | null;
  /** Quorum / gateway and floor / gateway, from the same run. */
  ratio: number | null;
  floorRatio: number | null;
  target: Target | null;
  /** 'pass' or 'miss' against the target; 'errors' when a phase the row reads had failed calls; 'not run' when a figure is missing. */
  mark: 'pass' | 'miss' | 'errors' | 'not run' | null;
}

const ratioOf = (a: number | null, b: number | null): number | null => (a === null || b === null || b === 0 ? null : a / b);

type Side = 'one' | 'sixteen';

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
    // The floor stands beside the ratio, it is not part of it: its errors do not void the mark.
    const counted = target?.kind === 'ratio' ? [figures.quorum, figures.gateway] : [figures.quorum];
    const ok = counted.every((f) => !f || f.ok);
    const mark = markOf(target, target?.kind === 'ratio' ? ratio : q, ok);
    rows.push({ label, unit, quorum: q, gateway: g, floor: fl, ratio, floorRatio: ratioOf(fl, g), target, mark });
  };
  const peers = (side: Side): { gateway: PhaseFigures | null; floor: PhaseFigures | null } => ({
    gateway: gateway?.[side] ?? null,
    floor: floor?.[side] ?? null,
  });
  const express = (side: Side): PhaseFigures | null => (side === 'one' ? quorum.express1 : quorum.express16);
  const at = (side: Side): string => (side === 'one' ? 'one at a time' : '16 concurrent');

  for (const side of ['one', 'sixteen'] as const) {
    add(
      `express overhead p50, ${at(side)}`,
      'ms',
      { quorum: express(side), ...peers(side) },
      (f) => f.overheadP50Ms,
      side === 'one' ? { kind: 'ratio', atMost: 2 } : null,
    );
    add(`express overhead p99, ${at(side)}`, 'ms', { quorum: express(side), ...peers(side) }, (f) => f.overheadP99Ms, null);
  }
  for (const side of ['one', 'sixteen'] as const)
    add(`express CPU per call (every process), ${at(side)}`, 'ms', { quorum: express(side), ...peers(side) }, (f) => f.cpuMsPerCall, {
      kind: 'ratio',
      atMost: 3,
    });
  for (const side of ['one', 'sixteen'] as const)
    add(
      `express calls/s, ${at(side)}`,
      'calls/s',
      { quorum: express(side), ...peers(side) },
      (f) => f.callsPerS,
      side === 'sixteen' ? { kind: 'ratio', atLeast: 0.5 } : null,
    );
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
    atLeast: 30,
  });
  const memoryTarget: Target = { kind: 'absolute', atMost: 400, strict: true };
  const { memory } = quorum;
  rows.push({
    label: `API + worker resident, peak with ${memory?.inFlight ?? 500} in flight`,
    unit: 'MB',
    quorum: memory?.peakMb ?? null,
    gateway: null,
    floor: null,
    ratio: null,
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
  const strict = target.kind === 'absolute' && target.strict === true;
  return (strict ? value < target.atMost : value <= target.atMost) ? 'pass' : 'miss';
}

/** How a target reads in the table: `≤ 2x`, `≥ 30`, `< 400 MB`. */
export function targetText(target: Target | null, unit: PeerRow['unit']): string {
  if (target === null) return '';
  const suffix = target.kind === 'ratio' ? 'x' : ` ${unit}`;
  if ('atLeast' in target) return `≥ ${target.atLeast}${suffix}`;
  return `${target.kind === 'absolute' && target.strict ? '<' : '≤'} ${target.atMost}${suffix}`;
}
