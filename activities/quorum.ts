import { CancelledFailure, Context } from '@temporalio/activity';
import type { Engines } from '../engines';
import { createLateCallUsage } from './engine-call';
import { graceThenCut, releaseRound } from './quorum-rounds';

/** The quorum's activities, registered beside the seat calls (activities/deliberation.ts). */
export function createQuorumActivities(engines: Engines) {
  return {
    lateCalls: createLateCallUsage(engines),

    /**
     * A quorum round's grace (workflows/quorum.ts): `ms`, or less when the round is released; then the round's calls
     * still out are cut. A local activity beside the seat calls: a workflow timer's start and its firing would each
     * wait for the task's next heartbeat while a seat call is out (up to 4 s apiece).
     */
    async quorumGrace(input: { round: string; ms: number }): Promise<void> {
      const signal = Context.current().cancellationSignal;
      await graceThenCut(input.round, input.ms, signal);
      // A worker stopping: the grace runs again where the workflow goes on.
      if (signal.aborted) throw new CancelledFailure('CANCELLED');
    },

    /** Every seat of a quorum round settled within its grace: the grace ends now. */
    async quorumRelease(input: { round: string }): Promise<void> {
      releaseRound(input.round);
    },
  };
}
