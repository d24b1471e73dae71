/**
 * The time a deliberation spends inside the worker between its steps (issue 42 item 2: what makes a panel's tail),
 * kept per workflow run from its local activities' own timestamps, so no workflow code and no history is involved:
 *   - dispatch: a local activity scheduled by Core (`currentAttemptScheduledTimestampMs`, set when Core took the
 *     workflow's command) until it runs here: Core's local-activity queue, the slot, the main event loop.
 *   - turnaround: a step's end until the workflow scheduled its next: the result's way through Core, the activation,
 *     the workflow thread (behind every other run's activations), the completion back to Core. A run's turnarounds
 *     follow one another, so their sum is time on its critical path; steps scheduled together (a round's seats)
 *     count the one turnaround that scheduled them once. Kept only for a run whose steps all ran as local activities.
 */
export interface RunWaits {
  turnaroundMs: number;
  turnarounds: number;
}

interface RunState extends RunWaits {
  /** The latest end of one of the run's steps, and whether a later schedule has already been counted against it. */
  lastEndMs: number | undefined;
  counted: boolean;
  /** A step ran as an ordinary activity (through the server): the run's turnarounds are not the worker's alone. */
  mixed: boolean;
}

/** Runs whose end was never seen (a worker lost mid-run, a cancelled call) are forgotten oldest first past this. */
const MAX_RUNS = 10_000;

export class StepWaits {
  private readonly runs = new Map<string, RunState>();

  /** A step of `runId` starts at `nowMs`, scheduled at `scheduledMs`: its dispatch wait. */
  started(runId: string, scheduledMs: number, nowMs: number): number {
    const run = this.runs.get(runId) ?? this.open(runId);
    if (run.lastEndMs !== undefined && !run.counted && scheduledMs >= run.lastEndMs) {
      run.turnaroundMs += scheduledMs - run.lastEndMs;
      run.turnarounds += 1;
      run.counted = true;
    }
    return Math.max(0, nowMs - scheduledMs);
  }

  /** A step of `runId` ran as an ordinary activity: nothing of the run is reported. */
  remote(runId: string): void {
    (this.runs.get(runId) ?? this.open(runId)).mixed = true;
  }

  /**
   * A step of `runId` ended at `nowMs`; `last` when it was the run's last step: the run's waits (unless a step ran
   * remotely), then the run is forgotten.
   */
  ended(runId: string, nowMs: number, last: boolean): RunWaits | undefined {
    const run = this.runs.get(runId);
    if (!run) return undefined;
    if (last) {
      this.runs.delete(runId);
      return run.mixed ? undefined : { turnaroundMs: run.turnaroundMs, turnarounds: run.turnarounds };
    }
    if (run.lastEndMs === undefined || nowMs >= run.lastEndMs) run.lastEndMs = nowMs;
    run.counted = false;
    return undefined;
  }

  private open(runId: string): RunState {
    if (this.runs.size >= MAX_RUNS) {
      const oldest = this.runs.keys().next();
      if (!oldest.done) this.runs.delete(oldest.value);
    }
    const run: RunState = { turnaroundMs: 0, turnarounds: 0, lastEndMs: undefined, counted: false, mixed: false };
    this.runs.set(runId, run);
    return run;
  }
}
