import type { OperationDeps, StoreDeps } from './deps';
import { WorkflowNotFoundError } from '@temporalio/client';
import { findRun, type RunRecord } from '../db/repositories/runs';
import { ENDED_STATES, type RunKind } from '../domain/runs';
import { cancelRun } from '../starters/runs';
import { requireScope } from './checks';
import { RUN_SCOPES, type RunReader } from './run-list';
import { findOwnRun, pollView, type RunView } from './run-poll';

/**
 * Cancelling a run (POST /v1/tests/{id}/cancel and /v1/certify/{id}/cancel, MCP `cancel_run`, the console's button,
 * `quorum run cancel`; issue 28 item 2). The run's workflow is signalled (workflows/benchmark.ts): the questions in
 * flight are abandoned, and the run ends `cancelled` with the share of its charge its unjudged questions stood for
 * credited back (db/repositories/runs.ts `endRun`, once). A run that has already ended is left as it is.
 */

/**
 * How long a cancel waits for its run to end, so that its answer shows `cancelled` and the refund: the abandoned
 * questions and the run's last step take a second or two when healthy.
 */
export const CANCEL_WAIT_MS = 15_000;
const CANCEL_POLL_MS = 200;

export interface CancelResult {
  /** The run as its poll shows it now: `cancelled` once it stopped, unchanged when it had already ended. */
  view: RunView;
  /** The run was live and was told to stop (false: it had already ended, and nothing was done). */
  signalled: boolean;
}

export async function cancelOrgRun(
  deps: Pick<OperationDeps, 'db' | 'form' | 'client'>,
  canceller: RunReader,
  input: { kind?: RunKind; batchId: string },
  waitMs = CANCEL_WAIT_MS,
): Promise<CancelResult> {
  const run = await findOwnRun(deps, canceller.orgId, input.kind, input.batchId);
  // Without the kind in the address (MCP), the run's own kind says which scope may stop it, as its poll would.
  requireScope(canceller, RUN_SCOPES[run.kind]);
  if (ENDED_STATES.includes(run.state)) return { view: await pollView(deps, canceller.orgId, run), signalled: false };
  let live = true;
  try {
    await cancelRun(deps.client, run);
  } catch (err) {
    // Its workflow closed between the read and the signal (it ended by itself): the row says how.
    if (!(err instanceof WorkflowNotFoundError)) throw err;
    live = false;
  }
  const now = live ? await untilEnded(deps, run, waitMs) : ((await findRun(deps.db, canceller.orgId, run.id)) ?? run);
  return { view: await pollView(deps, canceller.orgId, now), signalled: live };
}

/** The run's row once it has ended, or as it is when `waitMs` ran out (still stopping: the poll shows the end). */
async function untilEnded(deps: StoreDeps, run: RunRecord, waitMs: number): Promise<RunRecord> {
  const until = Date.now() + waitMs;
  for (;;) {
    const now = (await findRun(deps.db, run.orgId, run.id)) ?? run;
    if (ENDED_STATES.includes(now.state) || Date.now() >= until) return now;
    await new Promise((resolve) => setTimeout(resolve, CANCEL_POLL_MS));
  }
}
