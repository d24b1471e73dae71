import { ActivityFailure, isCancellation } from '@temporalio/workflow';
import { withoutAddresses } from '../domain/caller-errors';
import type { SeatedEngine } from '../domain/seat-assignment';
import { isQuorumLate } from './quorum';

/** What an engine of a chain gave: an answer the step can use, or why not (the engine ran but its reply is unusable). */
export type EngineReply<T> = { answer: T } | { unusable: string };

export interface ChainOptions {
  /** Asked before each engine; false ends the chain there (the step would pass the cost ceiling). */
  affords?: (engine: SeatedEngine) => boolean;
  /** Told of each engine that did not answer: `engineId: why`, or the unusable reply's reason. */
  failed: (reason: string) => void;
}

/** An activity's failure reaches the workflow wrapped; its cause says what the engine or database reported. */
export function failureReason(err: unknown): string {
  if (err instanceof ActivityFailure && err.cause) return err.cause.message;
  return err instanceof Error ? err.message : String(err);
}

/**
 * A backup chain (seat, judge or synthesis): each engine in turn until one answers, the first answer wins. A failure
 * that reaches here is permanent (ENGINE_CALL has retried the transient ones), so the next engine takes over; a
 * cancellation passes through. Undefined when no engine answered.
 */
export async function firstAnswering<T>(
  chain: readonly SeatedEngine[],
  call: (engine: SeatedEngine) => Promise<EngineReply<T>>,
  options: ChainOptions,
): Promise<T | undefined> {
  for (const engine of chain) {
    if (options.affords && !options.affords(engine)) return undefined;
    try {
      const reply = await call(engine);
      if ('answer' in reply) return reply.answer;
      options.failed(reply.unusable);
    } catch (err) {
      // A seat its quorum's grace cut is late, not failed: it does not move to its backup.
      if (isCancellation(err) || isQuorumLate(err)) throw err;
      // Receipts keep this line: an address in a failure that did not come from the engine layer (a database error
      // while reading an own key) is removed here too.
      options.failed(`${engine.engineId}: ${withoutAddresses(failureReason(err))}`);
    }
  }
  return undefined;
}
