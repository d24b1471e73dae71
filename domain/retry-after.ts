import { SPEC_LATENCY_MU } from './sim-latency';

/**
 * `Retry-After` of a 409 `request_in_progress` (issue 28 item 7): how long the running call has left, from where it is
 * (its stage, the deliberation workflow's progress query) and how long the mode's stages typically take, so a client
 * that honours the header, as the official OpenAI SDKs do, retries once the answer is stored and gets the replay
 * instead of spending its retries on more 409s.
 */

/** Where the running call is: the deliberation workflow's `DeliberationProgress`, as far as the estimate reads it. */
export interface CallProgress {
  stage: 'classifying' | 'seats' | 'judging' | 'critique' | 'synthesising' | 'settling' | 'done';
  round: number;
  seats: number;
  seatsAnswered: number;
}

/** How long a mode's stages typically take, in milliseconds: each a median over its recent calls, or the spec's figure. */
export interface StageTimes {
  /** One seat pass (the seats answer in parallel: the pass ends with its slowest). */
  seatPassMs: number;
  judgeMs: number;
  synthesisMs: number;
  /** Seat passes a call runs (the first answers, then each critique round). */
  rounds: number;
}

/** What the mode's recent calls measured (medians over the calls that ran each stage); null where none did. */
export interface ObservedStageTimes {
  seatPassMs: number | null;
  judgeMs: number | null;
  synthesisMs: number | null;
  rounds: number | null;
}

/**
 * Without observed calls, the spec's p50 of a whole deliberation (28.5 s, spec 01 §8), split evenly over the three
 * engine steps one after another of a one-round panel: the seat pass, the judge and the synthesis.
 */
const SPEC_STEP_MS = Math.exp(SPEC_LATENCY_MU) / 3;

/**
 * The OpenAI SDKs' ceiling: openai-python's `_calculate_retry_timeout` honours `Retry-After` only when 0 < value ≤ 60
 * (newer releases allow more, and do not retry at all beyond their ceiling); otherwise it falls back to its own backoff
 * (0.5 s doubling, at most 8 s), which spends its retries long before a deliberation ends. The Node SDK we test with
 * (node_modules/openai/src/client.ts `retryRequest`, v6.49) sleeps whatever `retry-after-ms` or `Retry-After` says,
 * that backoff only when neither is sent. 60 s suits every one of them.
 */
export const RETRY_AFTER_MAX_S = 60;
export const RETRY_AFTER_MIN_S = 1;

export function stageTimes(observed: ObservedStageTimes): StageTimes {
  return {
    seatPassMs: observed.seatPassMs ?? SPEC_STEP_MS,
    judgeMs: observed.judgeMs ?? SPEC_STEP_MS,
    synthesisMs: observed.synthesisMs ?? SPEC_STEP_MS,
    rounds: Math.max(1, Math.round(observed.rounds ?? 1)),
  };
}

/**
 * Milliseconds the call has left. A stage under way counts whole (how long it has run is not known), except a seat
 * pass's answered share, and the synthesis is counted ahead though a call its judge settled may skip it: so the
 * estimate errs long, and a client waits a little past the answer rather than spending a retry before it. Rounds
 * beyond the typical count are not foreseen; a later 409 estimates again from where the call then is.
 */
export function remainingMs(progress: CallProgress | undefined, t: StageTimes): number {
  const roundMs = t.seatPassMs + t.judgeMs;
  /** The rounds after round `r`, then the synthesis. */
  const later = (r: number): number => Math.max(0, t.rounds - r) * roundMs + t.synthesisMs;
  if (!progress) return later(0);
  const r = Math.max(1, progress.round);
  switch (progress.stage) {
    case 'classifying':
      return later(0);
    case 'seats':
    case 'critique': {
      const unanswered = progress.seats > 0 ? 1 - progress.seatsAnswered / progress.seats : 1;
      // A lone seat (the express lane) is judged by no one and synthesises nothing.
      if (progress.seats === 1) return t.seatPassMs * unanswered;
      return t.seatPassMs * unanswered + t.judgeMs + later(r);
    }
    case 'judging':
      return t.judgeMs + later(r);
    case 'synthesising':
      return t.synthesisMs;
    case 'settling':
    case 'done':
      return 0;
  }
}

/** Whole seconds for the header, at least 1 s (a retry sooner finds the call running) and at most 60 s (see above). */
export function inProgressRetryAfter(progress: CallProgress | undefined, t: StageTimes): number {
  return Math.min(RETRY_AFTER_MAX_S, Math.max(RETRY_AFTER_MIN_S, Math.ceil(remainingMs(progress, t) / 1000)));
}
