import type { Client } from '@temporalio/client';
import type { Knex } from 'knex';
import { releaseClosedRequest, staleHolds } from '../db/repositories/hold-sweep';
import type { Logger } from '../infra/log';
import { workflowStatus } from '../starters/deliberation';

/**
 * Issue 38 item 11: a hold whose workflow an operator terminated (or that timed out) would stay reserved forever, for
 * a closed workflow never runs its own release. Every worker sweeps: a hold of a request still marked running, older
 * than the bound, whose workflow Temporal says is no longer running (or gone), or whose request a later run under its
 * key superseded, is released and its request failed, nothing charged (a held reservation was never settled).
 * Exactly once whichever worker sweeps (db/repositories/hold-sweep.ts).
 */

export interface HoldSweepDeps {
  db: Knex;
  client: Client;
}

/** One sweep: the holds released. */
export async function releaseClosedHolds(deps: HoldSweepDeps, olderThanMs: number): Promise<number> {
  let released = 0;
  for (const hold of await staleHolds(deps.db, olderThanMs)) {
    // A superseded request's workflow id names its successor's workflow; it was taken over because its own had ended.
    if (!hold.superseded && (await workflowStatus(deps.client, hold.workflowId)) === 'RUNNING') continue;
    if (await releaseClosedRequest(deps.db, hold)) released++;
  }
  return released;
}

/** How often a worker sweeps, and how old a hold must be to be looked at, unless QUORUM_HOLD_SWEEP_S says otherwise. */
export const DEFAULT_HOLD_SWEEP_S = 60;

/** Sweeps every `everyMs` (holds at least that old) until stopped; a failed sweep is logged and tried at the next tick. */
export function startHoldSweep(deps: HoldSweepDeps & { log: Logger }, everyMs: number): { stop(): Promise<void> } {
  let current: Promise<void> | undefined;
  const tick = (): void => {
    // A sweep still going (Temporal slow to describe) is not doubled.
    current ??= releaseClosedHolds(deps, everyMs)
      .then(
        (released) => {
          if (released > 0) deps.log.info('holds of closed workflows released', { released });
        },
        (err: unknown) => deps.log.warn('hold sweep failed; tried again at the next tick', { err }),
      )
      .finally(() => (current = undefined));
  };
  const timer = setInterval(tick, everyMs);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await current;
    },
  };
}
