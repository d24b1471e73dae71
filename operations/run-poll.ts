import type { AuthContext } from '../db/repositories/api-keys';
import { findMode } from '../db/repositories/modes';
import { findRun, type RunRecord } from '../db/repositories/runs';
import { QuorumError } from '../domain/errors';
import type { ModeRecord } from '../domain/modes';
import { ENDED_STATES, type RunKind, type RunProgress } from '../domain/runs';
import { runProgress } from '../starters/runs';
import type { OperationDeps } from './deps';

/** Polling a run (GET /v1/tests, GET /v1/certify): progress while it is live, its results once it has ended. */
export interface RunView {
  run: RunRecord;
  mode: ModeRecord | undefined;
  progress: RunProgress;
}

export async function pollRun(deps: OperationDeps, auth: AuthContext, kind: RunKind, batchId: string): Promise<RunView> {
  const run = await findRun(deps.db, auth.orgId, batchId);
  if (!run || run.kind !== kind)
    throw new QuorumError(
      deps.form === 'B' ? 'batch_not_found' : 'not_found',
      `No ${kind === 'test' ? 'test run' : 'certification'} \`${batchId.slice(0, 64)}\` in this organisation.`,
      {
        param: 'batch_id',
      },
    );
  const [progress, mode] = await Promise.all([runProgress(deps.client, deps.db, run), findModeById(deps, auth, run)]);
  // The run may have ended between reading its row and querying its workflow, which reports the end only after its
  // summary is written: read the row again, so an ended run is never shown without its results.
  const ended = ENDED_STATES.includes(progress.state) && !ENDED_STATES.includes(run.state);
  return { run: (ended && (await findRun(deps.db, auth.orgId, batchId))) || run, mode, progress };
}

async function findModeById(deps: OperationDeps, auth: AuthContext, run: RunRecord): Promise<ModeRecord | undefined> {
  return findMode(deps.db, { orgId: auth.orgId, form: 'A', model: run.modeId });
}
