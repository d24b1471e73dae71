import { release } from '../../db/repositories/ledger';
import { getRun } from '../../db/repositories/runs';
import type { Invariant, Violation } from '../../domain/audit';
import { ENDED_STATES } from '../../domain/runs';
import { cancelRun } from '../../starters/runs';
import { stack } from './stack';

/**
 * What stack tests do so the auditor (issue 26 item 18) finds the shared test database clean after the suite
 * (test/stack/zz-audit.test.ts): repair what they leave (a hold given back, a run cancelled to its end rather than
 * its workflow terminated), and, where a test works below the level the auditor checks and its state cannot be
 * repaired (the ledger is append-only: a repository test's charge under a made-up request id stays without its
 * receipt), name its organisation and the invariants it breaks on purpose. The audit still checks every other
 * invariant of that organisation.
 */

const exemptions = new Map<string, { invariants: Set<Invariant>; why: string }>();

/** This organisation breaks `invariants` on purpose (a test of the layer below them); the suite's audit skips those. */
export function exemptFromAudit(orgId: string, invariants: readonly Invariant[], why: string): void {
  const known = exemptions.get(orgId);
  exemptions.set(orgId, { invariants: new Set([...(known?.invariants ?? []), ...invariants]), why: known ? `${known.why}; ${why}` : why });
}

/** Splits violations into those that fail the suite and those an exemption covers. */
export function withoutExemptions(violations: readonly Violation[]): { failing: Violation[]; exempted: Violation[] } {
  const failing: Violation[] = [];
  const exempted: Violation[] = [];
  for (const v of violations) {
    const exemption = v.ids.org_id === undefined ? undefined : exemptions.get(v.ids.org_id);
    (exemption?.invariants.has(v.invariant) ? exempted : failing).push(v);
  }
  return { failing, exempted };
}

/** Gives back every hold of the organisation: a repository test's reservations under made-up request ids. */
export async function releaseHolds(orgId: string): Promise<void> {
  const { db } = stack();
  const held = (await db('reservations').where({ org_id: orgId, state: 'held' }).select('request_id')) as { request_id: string }[];
  for (const h of held) await release(db, { orgId, requestId: h.request_id });
}

/**
 * Ends a run a test no longer needs as a client would: cancelled, then waited for until its workflow has ended it
 * and credited its unanswered questions back (a terminated workflow would leave the run going, its charge kept).
 * Needs the product's workers running.
 */
export async function cancelToEnd(runId: string, deadlineMs = 60_000): Promise<void> {
  const { db, env } = stack();
  const until = Date.now() + deadlineMs;
  let run = await getRun(db, runId);
  if (!ENDED_STATES.includes(run.state)) await cancelRun(env.client, run);
  while (!ENDED_STATES.includes(run.state)) {
    if (Date.now() > until) throw new Error(`run ${runId} still ${run.state} ${deadlineMs} ms after it was cancelled`);
    await new Promise((r) => setTimeout(r, 100));
    run = await getRun(db, runId);
  }
}
