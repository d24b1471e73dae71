import { microsToUsd } from './money';
import type { RunSummary } from './run-summary';
import type { Interval } from './statistics';
import type { RunKind, RunState } from './runs';

/**
 * The `run.ended` event a completion callback delivers (issue 28 item 6): who ended, how, and the key figures of its
 * batch summary, the same in both Forms (the poll has the full batch). Built from the ended run's row, so every
 * attempt of a delivery sends the same bytes and the same event id.
 */
export interface RunEventSource {
  id: string;
  kind: RunKind;
  state: RunState;
  model: string;
  keyKind: 'live' | 'test';
  totalQuestions: number;
  billedMicros: number;
  refundedMicros: number;
  errorCode: string | null;
  errorMessage: string | null;
  summary: RunSummary | null;
  finishedAt: Date | null;
}

export interface RunEndedEvent {
  id: string;
  object: 'event';
  type: 'run.ended';
  /** Unix seconds: when the run ended. */
  created: number;
  batch_id: string;
  /** The endpoint it was launched at: `tests` runs are `test`, `certify` runs `certify`. */
  kind: 'test' | 'certify';
  state: RunState;
  model: string;
  /** A test key's run on `sim` engines: its verdict certifies nothing (issue 38 item 4). */
  simulated: boolean;
  summary: {
    questions: number;
    /** Questions answered, and those with at least one judge's verdict read. */
    answered: number;
    judged: number;
    win_rate: number | null;
    win_rate_interval: Interval | null;
    mode_accuracy: number | null;
    baseline_accuracy: number | null;
    verdict: string | null;
    billed_usd: number;
    refunded_usd: number;
  };
  error: { code: string; message: string } | null;
}

/** One event per run, so the id is the run's: a receiver dedups every retry (and any replayed end) by it. */
export function runEventId(runId: string): string {
  return `evt_${runId.replaceAll('-', '')}`;
}

export function runEndedEvent(run: RunEventSource): RunEndedEvent {
  const overall = run.summary?.overall;
  return {
    id: runEventId(run.id),
    object: 'event',
    type: 'run.ended',
    created: Math.floor((run.finishedAt ?? new Date(0)).getTime() / 1000),
    batch_id: run.id,
    kind: run.kind === 'test' ? 'test' : 'certify',
    state: run.state,
    model: run.model,
    simulated: run.keyKind === 'test',
    summary: {
      questions: run.totalQuestions,
      answered: overall?.questions ?? 0,
      judged: run.summary?.coverage?.judged ?? 0,
      win_rate: overall?.winRate?.winRate ?? null,
      win_rate_interval: overall?.winRate?.interval ?? null,
      mode_accuracy: overall ? overall.mode.rate : null,
      baseline_accuracy: overall ? overall.baseline.rate : null,
      verdict: run.summary?.verdict ?? null,
      billed_usd: microsToUsd(BigInt(run.billedMicros)),
      refunded_usd: microsToUsd(BigInt(run.refundedMicros)),
    },
    error: run.errorCode === null ? null : { code: run.errorCode, message: run.errorMessage ?? '' },
  };
}
