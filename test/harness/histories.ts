import path from 'node:path';
import type { HistoryAndWorkflowId } from '@temporalio/client';
import { type InjectedSinks, Worker } from '@temporalio/worker';
import { workflowBundle } from '../../worker/workers';
import type { DeliberationSinks } from '../../workflows/messages';

/** Recorded workflow histories (protobuf) that the replay guard replays against today's workflow code. */
export const historiesDir = path.join(__dirname, '..', 'histories');

/** The worker's sinks are never called on replay, but must be registered, or every call logs an error. */
const sinks: InjectedSinks<DeliberationSinks> = {
  deliberationEvents: {
    record: {
      fn: () => {
        throw new Error('a sink called on replay');
      },
      callDuringReplay: false,
    },
  },
};

/**
 * Replays each history against today's workflow code, as a worker that lost the execution from its cache must:
 * how many were replayed, and each one's nondeterminism (or other) error with its workflow id.
 */
export async function replayHistories(
  histories: Iterable<HistoryAndWorkflowId> | AsyncIterable<HistoryAndWorkflowId>,
): Promise<{ replayed: number; failures: string[] }> {
  const failures: string[] = [];
  let replayed = 0;
  for await (const result of Worker.runReplayHistories({ workflowBundle: await workflowBundle(), sinks }, histories)) {
    replayed += 1;
    if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
  }
  return { replayed, failures };
}
