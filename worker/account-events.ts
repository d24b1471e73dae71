import type { Client } from '@temporalio/client';
import type { Knex } from 'knex';
import type { Logger } from '../infra/log';
import { dispatchAccountEvents } from '../starters/account-events';
import { forgetHistories } from '../starters/histories';

/**
 * The account events' dispatcher (issue 41 item 4): every worker looks for raised events every `everyMs` and starts
 * their delivery workflows. An event is raised in the transaction that caused it (a charge's, for `balance.low`) with
 * no Temporal call there; this is what takes it to Temporal, within one tick. The same tick deletes from Temporal the
 * workflow histories of calls whose texts were blanked (starters/histories.ts): within seconds of a zero-retention call.
 */

/** How often a worker dispatches, unless QUORUM_ACCOUNT_EVENTS_POLL_MS says otherwise. */
export const DEFAULT_ACCOUNT_EVENTS_POLL_MS = 2_000;

export function startAccountEventDispatch(
  deps: { db: Knex; client: Client; log: Logger },
  opts: { everyMs: number; retryInitialMs: number },
): { stop(): Promise<void> } {
  let current: Promise<void> | undefined;
  const tick = (): void => {
    current ??= dispatchAccountEvents(deps.db, deps.client, opts.retryInitialMs)
      .then(() => forgetHistories(deps.db, deps.client))
      .then(
        () => undefined,
        (err: unknown) => deps.log.warn('account event dispatch failed; tried again at the next tick', { err }),
      )
      .finally(() => (current = undefined));
  };
  const timer = setInterval(tick, opts.everyMs);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await current;
    },
  };
}
