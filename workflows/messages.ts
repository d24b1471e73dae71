import { defineQuery, defineSignal, type Sinks } from '@temporalio/workflow';
import type { DeliberationEvent } from '../domain/deliberation-events';
import type { RunAdmission } from '../domain/run-admission';
import type { RunProgress } from '../domain/runs';

/**
 * The workflows' queries and signals, defined once here so the API, the MCP server and the CLI use them without
 * loading workflow code. Queries add nothing to a workflow's history.
 */

/** A run's progress (workflows/benchmark.ts). */
export const progressQuery = defineQuery<RunProgress>('progress');
/** A launched run's admission (its row and charge), undefined until its first step has run. */
export const admissionQuery = defineQuery<RunAdmission | undefined>('admission');
/** Stops a run: questions in flight are cancelled, unanswered ones credited back. */
export const cancelSignal = defineSignal('cancel');

export type DeliberationStage = 'classifying' | 'seats' | 'judging' | 'critique' | 'synthesising' | 'settling' | 'done';

/** Where a deliberation is, for a caller that waits on it (MCP progress notifications). */
export interface DeliberationProgress {
  stage: DeliberationStage;
  /** The seat pass under way: 1 for the first answers, then each critique round. */
  round: number;
  seats: number;
  /** Seats that have answered in this round. */
  seatsAnswered: number;
  /** Grows with every step, so a listener can tell something happened. */
  steps: number;
}

export const deliberationProgressQuery = defineQuery<DeliberationProgress>('deliberationProgress');

/**
 * How a deliberation hands its step events to its worker as they happen (issue 40 item 2): a sink call adds nothing to
 * the history and is made at the end of the workflow activation that took the step, which a local activity's result
 * starts at once, where a query waits for the task's heartbeat (about 4 s). The worker stores each (worker/workers.ts).
 */
export interface DeliberationSinks extends Sinks {
  deliberationEvents: { record(requestId: string, index: number, event: DeliberationEvent): void };
}
