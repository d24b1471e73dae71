import type { Exposition, Sample } from '../test/harness/prometheus';
import { round } from './results';

/**
 * Where a phase's calls waited (issue 42 item 2), read from the worker's `/metrics` before and after the phase: each
 * figure has a counter of its own, so a tail can be put down to what made it.
 *   - Workflow tasks queued at the server before the worker took them (Core's `workflow_task_schedule_to_start_latency`):
 *     slot waits and the dev server's dispatch.
 *   - Local activities (the engine calls, prepare, settle) queued inside the worker before they ran
 *     (`local_activity_…` has no schedule-to-start in Core, so: their execution time against the calls' own).
 *   - The process's event loop held up (prom-client's `nodejs_eventloop_lag_*`, whose histogram resets at each scrape,
 *     so the figure after a phase is that phase's): activities, the API and Core's callbacks share that loop.
 *   - Garbage collection (`nodejs_gc_duration_seconds`): the pauses' sum per call, by kind.
 *   - Inside the worker between a deliberation's steps (worker/step-waits.ts): each local activity's dispatch (Core
 *     scheduled it until it ran) and each deliberation's turnarounds summed (a step's end until the next's schedule:
 *     Core, the activation, the workflow thread).
 */
/** Observations of one histogram over the phase: how many, their mean, and the bucket bound under which 99% fell. */
interface Timed {
  runs: number;
  meanMs: number;
  p99AtMostMs: number | null;
}

export interface WaitFigures {
  workflowTaskScheduleToStart: { tasks: number; meanMs: number; p99AtMostMs: number | null };
  workflowTaskExecution: { tasks: number; meanMs: number; p99AtMostMs: number | null };
  /** Runs a call: a panel's are 11 (prepare, 9 engine calls, settle); more are runs again after a workflow task timed out. */
  localActivityExecution: { runs: number; perCall: number; meanMs: number };
  eventLoopLag: { p50Ms: number; p99Ms: number; maxMs: number } | null;
  gc: { msPerCall: number; byKind: Record<string, { pauses: number; ms: number }> };
  localActivityDispatch: Timed;
  /** A deliberation's first and last steps, ours alone (the hold, the settle: each a Postgres statement or transaction). */
  prepare: Timed;
  settle: Timed;
  /** Per deliberation: p50 and p99 as bucket bounds ("at most"). */
  turnaround: { calls: number; meanMs: number; p50AtMostMs: number | null; p99AtMostMs: number | null };
}

/** A family's samples whose labels include `labels`. */
const matching = (e: Exposition, fragment: string, labels: Record<string, string> = {}): Sample[] =>
  e.samples.filter((s) => s.name.includes(fragment) && Object.entries(labels).every(([k, v]) => s.labels[k] === v));

/** Sum of a family's samples whose name ends so (`_sum`, `_count`), over every label set that includes `labels`. */
function total(e: Exposition, fragment: string, suffix: string, labels: Record<string, string> = {}): number {
  return matching(e, fragment, labels)
    .filter((s) => s.name.endsWith(suffix))
    .reduce((n, s) => n + s.value, 0);
}

/**
 * A histogram's change over the phase: count, mean and the least bucket bounds under which 50% and 99% of the
 * phase's observations fell (bucket bounds, so "at most"; null when that share lies past the last finite bound).
 */
function histogramDelta(
  before: Exposition,
  after: Exposition,
  fragment: string,
  labels: Record<string, string> = {},
): { n: number; meanMs: number; p50AtMostMs: number | null; p99AtMostMs: number | null } {
  const n = total(after, fragment, '_count', labels) - total(before, fragment, '_count', labels);
  const sum = total(after, fragment, '_sum', labels) - total(before, fragment, '_sum', labels);
  const buckets = new Map<number, number>();
  for (const [e, sign] of [
    [after, 1],
    [before, -1],
  ] as const)
    for (const s of matching(e, fragment, labels).filter((x) => x.name.endsWith('_bucket'))) {
      const le = s.labels.le === '+Inf' ? Infinity : Number(s.labels.le);
      buckets.set(le, (buckets.get(le) ?? 0) + sign * s.value);
    }
  const sorted = [...buckets.entries()].sort((a, b) => a[0] - b[0]);
  const atMost = (share: number): number | null => {
    const bound = sorted.find(([, count]) => count >= share * n)?.[0];
    return n === 0 || bound === undefined || bound === Infinity ? null : round(bound * 1000, 1);
  };
  return { n, meanMs: n > 0 ? round((sum * 1000) / n, 2) : 0, p50AtMostMs: atMost(0.5), p99AtMostMs: atMost(0.99) };
}

function gauge(e: Exposition, name: string): number | undefined {
  return e.samples.find((s) => s.name === name)?.value;
}

export function waitFigures(before: Exposition, after: Exposition, calls: number): WaitFigures {
  const scheduleToStart = histogramDelta(before, after, 'workflow_task_schedule_to_start_latency');
  const execution = histogramDelta(before, after, 'workflow_task_execution_latency');
  const local = histogramDelta(before, after, 'local_activity_execution_latency');
  const timed = (fragment: string, labels: Record<string, string> = {}): Timed => {
    const h = histogramDelta(before, after, fragment, labels);
    return { runs: h.n, meanMs: h.meanMs, p99AtMostMs: h.p99AtMostMs };
  };
  const turnaround = histogramDelta(before, after, 'quorum_deliberation_turnaround_seconds');
  const lag = (name: string): number | undefined => gauge(after, `nodejs_eventloop_lag_${name}_seconds`);
  const [p50, p99, max] = [lag('p50'), lag('p99'), lag('max')];
  const byKind: Record<string, { pauses: number; ms: number }> = {};
  for (const s of matching(after, 'nodejs_gc_duration_seconds')) {
    const kind = s.labels.kind ?? 'all';
    const was =
      matching(before, 'nodejs_gc_duration_seconds').find((b) => b.name === s.name && b.labels.kind === s.labels.kind)?.value ?? 0;
    const entry = (byKind[kind] ??= { pauses: 0, ms: 0 });
    if (s.name.endsWith('_count')) entry.pauses += s.value - was;
    if (s.name.endsWith('_sum')) entry.ms = round(entry.ms + (s.value - was) * 1000, 1);
  }
  const gcMs = Object.values(byKind).reduce((n, k) => n + k.ms, 0);
  return {
    workflowTaskScheduleToStart: { tasks: scheduleToStart.n, meanMs: scheduleToStart.meanMs, p99AtMostMs: scheduleToStart.p99AtMostMs },
    workflowTaskExecution: { tasks: execution.n, meanMs: execution.meanMs, p99AtMostMs: execution.p99AtMostMs },
    localActivityExecution: { runs: local.n, perCall: round(local.n / Math.max(1, calls), 2), meanMs: local.meanMs },
    eventLoopLag:
      p50 === undefined || p99 === undefined || max === undefined
        ? null
        : { p50Ms: round(p50 * 1000, 1), p99Ms: round(p99 * 1000, 1), maxMs: round(max * 1000, 1) },
    gc: { msPerCall: round(gcMs / Math.max(1, calls), 2), byKind },
    localActivityDispatch: timed('quorum_local_activity_dispatch_seconds'),
    prepare: timed('quorum_deliberation_stage_duration_seconds', { stage: 'prepare' }),
    settle: timed('quorum_deliberation_stage_duration_seconds', { stage: 'settle' }),
    turnaround: {
      calls: turnaround.n,
      meanMs: turnaround.meanMs,
      p50AtMostMs: turnaround.p50AtMostMs,
      p99AtMostMs: turnaround.p99AtMostMs,
    },
  };
}

/** One line for the table under the phases. */
export function waitsText(w: WaitFigures): string {
  const atMost = (v: number | null): string => (v === null ? '> last bucket' : `≤ ${v}`);
  const lag = w.eventLoopLag
    ? `event loop lag p50 ${w.eventLoopLag.p50Ms}, p99 ${w.eventLoopLag.p99Ms}, max ${w.eventLoopLag.maxMs} ms`
    : 'event loop lag —';
  return [
    `wf tasks ${w.workflowTaskScheduleToStart.tasks}: queued mean ${w.workflowTaskScheduleToStart.meanMs} ms (p99 ${atMost(w.workflowTaskScheduleToStart.p99AtMostMs)}), ran mean ${w.workflowTaskExecution.meanMs} ms (p99 ${atMost(w.workflowTaskExecution.p99AtMostMs)})`,
    `local activities ${w.localActivityExecution.runs} (${w.localActivityExecution.perCall} a call), mean ${w.localActivityExecution.meanMs} ms, dispatched in mean ${w.localActivityDispatch.meanMs} ms (p99 ${atMost(w.localActivityDispatch.p99AtMostMs)})`,
    `prepare mean ${w.prepare.meanMs} ms (p99 ${atMost(w.prepare.p99AtMostMs)}), settle mean ${w.settle.meanMs} ms (p99 ${atMost(w.settle.p99AtMostMs)})`,
    `turnarounds a call (${w.turnaround.calls} calls): mean ${w.turnaround.meanMs} ms, p50 ${atMost(w.turnaround.p50AtMostMs)}, p99 ${atMost(w.turnaround.p99AtMostMs)}`,
    lag,
    `GC ${w.gc.msPerCall} ms a call (${Object.entries(w.gc.byKind)
      .filter(([, k]) => k.pauses > 0)
      .map(([kind, k]) => `${kind} ${k.pauses}× ${k.ms} ms`)
      .join(', ')})`,
  ].join('; ');
}
