import { questionResults, type RunRecord } from '../db/repositories/runs';
import { pairedComparison } from '../domain/run-summary';
import type { PairedDifference } from '../domain/statistics';
import type { StoreDeps } from './deps';

/** A paired re-run (`svc.same_questions_as`, issue 28 item 4) against the earlier run whose questions it ran. */
export interface PairedView {
  against: string;
  difference: PairedDifference;
}

/**
 * The paired difference of a run launched with `svc.same_questions_as`, undefined for any other run. Read from both
 * runs' question rows at each poll, so it grows with the questions both runs have judged so far.
 */
export async function pairedView(deps: StoreDeps, run: RunRecord): Promise<PairedView | undefined> {
  const against = run.spec.sameQuestionsAs;
  if (against === undefined) return undefined;
  const [now, before] = await Promise.all([questionResults(deps.db, run.id), questionResults(deps.db, against)]);
  return { against, difference: pairedComparison(now, before) };
}
