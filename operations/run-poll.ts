import type { KeyPrincipal } from './principal';
import { attemptsBeside, type CertificationAttempt } from '../db/repositories/certifications';
import { findMode } from '../db/repositories/modes';
import { findRun, type RunRecord } from '../db/repositories/runs';
import { QuorumError } from '../domain/errors';
import type { ModeRecord } from '../domain/modes';
import { ENDED_STATES, type RunKind, type RunProgress } from '../domain/runs';
import { runProgress } from '../starters/runs';
import type { OperationDeps, StoreDeps, TemporalOptional } from './deps';
import { pairedView, type PairedView } from './run-paired';

/** Polling a run (GET /v1/tests, GET /v1/certify): progress while it is live, its results once it has ended. */
export interface RunView {
  run: RunRecord;
  mode: ModeRecord | undefined;
  progress: RunProgress;
  /** The poll's, of a run launched with `svc.same_questions_as`. */
  paired?: PairedView;
  /** The poll's, of a certification: every attempt on its mode configuration (issue 38 item 3). */
  attempts?: CertificationAttempt[];
}

export async function pollRun(deps: OperationDeps, auth: KeyPrincipal, kind: RunKind, batchId: string): Promise<RunView> {
  return pollView(deps, auth.orgId, await findOwnRun(deps, auth.orgId, kind, batchId));
}

/** The poll's view of a run (a cancel answers with it too): `viewOf`, and a paired re-run's comparison. */
export async function pollView(deps: TemporalOptional<'db' | 'form'>, orgId: string, run: RunRecord): Promise<RunView> {
  const [view, paired, attempts] = await Promise.all([
    viewOf(deps, orgId, run),
    pairedView(deps, run),
    run.kind === 'certification' ? attemptsBeside(deps.db, run) : undefined,
  ]);
  return { ...view, ...(paired && { paired }), ...(attempts && { attempts }) };
}

/**
 * The organisation's run of that kind (any kind when absent), or the poll's not-found error: another organisation's
 * run is not found, exactly like an id that never existed.
 */
export async function findOwnRun(
  deps: Pick<OperationDeps, 'db' | 'form'>,
  orgId: string,
  kind: RunKind | undefined,
  batchId: string,
): Promise<RunRecord> {
  const run = await findRun(deps.db, orgId, batchId);
  if (run && (kind === undefined || run.kind === kind)) return run;
  const what = kind === undefined ? 'run' : kind === 'test' ? 'test run' : 'certification';
  throw new QuorumError(
    deps.form === 'B' ? 'batch_not_found' : 'not_found',
    `No ${what} \`${batchId.slice(0, 64)}\` in this organisation.`,
    {
      param: 'batch_id',
    },
  );
}

/** A run as the poll shows it: its row, its mode, and its progress (live from its workflow while it runs). */
export async function viewOf(deps: TemporalOptional<'db' | 'form'>, orgId: string, run: RunRecord): Promise<RunView> {
  const [progress, mode] = await Promise.all([runProgress(deps.client, deps.db, run), findModeById(deps, orgId, run)]);
  // The run may have ended between reading its row and querying its workflow, which reports the end only after its
  // summary is written: read the row again, so an ended run is never shown without its results.
  const ended = ENDED_STATES.includes(progress.state) && !ENDED_STATES.includes(run.state);
  return { run: (ended && (await findRun(deps.db, orgId, run.id))) || run, mode, progress };
}

async function findModeById(deps: StoreDeps, orgId: string, run: RunRecord): Promise<ModeRecord | undefined> {
  return findMode(deps.db, { orgId, form: 'A', model: run.modeId });
}
