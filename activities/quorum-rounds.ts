import { ApplicationFailure } from '@temporalio/activity';
import { QUORUM_LATE } from '../domain/outcome';

/**
 * The seat calls of quorum rounds in flight in this worker (issue 40 item 6), by round. A deliberation's seat calls run
 * as local activities in the worker that runs its workflow task, and so do its round's grace and release: the grace
 * cuts the calls still out by aborting their requests here, and they end as `QuorumLate` failures. Nothing is
 * cancelled through Temporal: a local activity cancelled just as it completes fails the workflow task
 * ("Invalid transition in state machine"), which a quorum's cut would otherwise meet whenever the slow seat answers at
 * the end of the grace.
 */
interface Round {
  calls: Set<AbortController>;
  /** Every seat settled before the grace passed: the grace ends at once and cuts nothing. */
  released: boolean;
  wake?: () => void;
}

/** Long past any round's calls and their retries; a round is then forgotten. */
const REMEMBER_MS = 10 * 60_000;
const rounds = new Map<string, Round>();

function roundOf(key: string): Round {
  let round = rounds.get(key);
  if (!round) {
    round = { calls: new Set(), released: false };
    rounds.set(key, round);
    setTimeout(() => rounds.delete(key), REMEMBER_MS).unref();
  }
  return round;
}

export function lateFailure(): ApplicationFailure {
  return ApplicationFailure.nonRetryable('late: the quorum had answered and its grace had passed', QUORUM_LATE);
}

/**
 * A seat call of round `key`: its signal aborts when the grace cuts the round. A call that joins after the cut (a
 * retry that was waiting out its backoff) runs to its end: the round waits for it, as without a quorum. A workflow
 * task that failed and runs again here runs its round again under the same key, so a round never refuses a call.
 */
export function joinRound(key: string): { signal: AbortSignal; leave(): void } {
  const round = roundOf(key);
  const controller = new AbortController();
  round.calls.add(controller);
  return { signal: controller.signal, leave: () => round.calls.delete(controller) };
}

/** Waits `ms`, or until the round is released; then cuts the round's calls still in flight. */
export async function graceThenCut(key: string, ms: number, signal: AbortSignal): Promise<void> {
  const round = roundOf(key);
  // A round run again (its workflow task failed and runs again here) starts its grace afresh.
  round.released = false;
  await new Promise<void>((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      round.wake = undefined;
      resolve();
    };
    const timer = setTimeout(done, ms);
    round.wake = done;
    signal.addEventListener('abort', done, { once: true });
  });
  if (round.released || signal.aborted) return;
  for (const call of round.calls) call.abort();
}

/** Every seat of the round has settled: its grace ends now. */
export function releaseRound(key: string): void {
  const round = roundOf(key);
  round.released = true;
  round.wake?.();
}
