import { Counter, Histogram } from 'prom-client';
import { enginePathMs } from '../domain/engine-path';
import type { Outcome } from '../domain/outcome';
import { DURATION_BUCKETS, processRegistry } from '../infra/metrics';

/**
 * The metrics of the process that serves the edges (docs/metrics.md). Per process, as Prometheus scrapes them: every
 * app of the process (tests start several) adds to the same series, and each replica of the API is a target of its
 * own. The HTTP edge adds its request timings to this registry and serves it at `/metrics`.
 */
export const registry = processRegistry();
// Each metric declared whole, as worker/metrics.ts explains.

const deliberationsEnded = new Counter({
  name: 'quorum_deliberations_total',
  help: 'Deliberations this API started that ended, by lane (unknown when failed) and outcome (succeeded, capped, failed with its error code)',
  labelNames: ['lane', 'outcome', 'code'] as const,
  registers: [registry],
});

const deliberationDuration = new Histogram({
  name: 'quorum_deliberation_duration_seconds',
  help: 'Deliberations end to end as the API sees them: key claimed, workflow started, result received',
  labelNames: ['lane', 'outcome'] as const,
  buckets: DURATION_BUCKETS,
  registers: [registry],
});

const deliberationOverhead = new Histogram({
  name: 'quorum_deliberation_overhead_seconds',
  help: "Deliberations that answered: end to end minus the engines' critical path (slowest seat per round, judge, synthesis)",
  labelNames: ['lane'] as const,
  buckets: DURATION_BUCKETS,
  registers: [registry],
});

const deliberationsStarted = new Counter({
  name: 'quorum_deliberation_starts_total',
  help: 'Deliberations this API started, by whether the server handed the first workflow task back with the start (eager: an API running its worker, QUORUM_ROLE=all)',
  labelNames: ['eager'] as const,
  registers: [registry],
});

/** A deliberation this API started; `eager`: its first workflow task came back with the start (no poll). */
export function deliberationStarted(eager: boolean): void {
  deliberationsStarted.inc({ eager: String(eager) });
}

/** A deliberation this API started answered (`startedMs`: performance.now() when the call reached it). */
export function deliberationAnswered(startedMs: number, outcome: Outcome): void {
  const seconds = (performance.now() - startedMs) / 1000;
  deliberationsEnded.inc({ lane: outcome.lane, outcome: outcome.status });
  deliberationDuration.observe({ lane: outcome.lane, outcome: outcome.status }, seconds);
  deliberationOverhead.observe({ lane: outcome.lane }, Math.max(0, seconds - enginePathMs(outcome) / 1000));
}

/** A deliberation this API started ended without an answer; its lane is not in the failure. */
export function deliberationFailed(startedMs: number, code: string): void {
  deliberationsEnded.inc({ lane: 'unknown', outcome: 'failed', code });
  deliberationDuration.observe({ lane: 'unknown', outcome: 'failed' }, (performance.now() - startedMs) / 1000);
}
