/**
 * The auditor's invariants (issue 26 item 18, DESIGN §7): what must hold over the whole database and Temporal for no
 * money to be taken twice, taken without a reason, or left held. `quorum audit` and the stack tests check them
 * (operations/audit.ts); each violation names the ids to look at. Pure: the names, their meaning and the report's lines.
 */

export const INVARIANTS = {
  balance_equals_ledger:
    "An organisation's balance equals the sum of its ledger entries' amounts, and its reserved amount the sum of their reserved deltas.",
  hold_matches_ledger:
    "A call's reservation row says what the ledger holds for it: its amount while held, nothing once settled or released.",
  hold_outlives_request:
    "No hold outlives its request: money held on the balance or on a person's plan belongs to a request still running (not superseded) whose workflow is running.",
  receipt_components:
    "A receipt's parts sum to what it billed (spec 01 replay rule 5): billed = engines + platform fee + mode fee − cap credit, the cap credit only on a call capped at its ceiling (Form B); or, capped in Form A, billed = the ceiling, below the parts' sum. A plan's call has no platform fee; the stored outcome names the same amounts.",
  receipt_seats_unaccounted:
    "A receipt's seat rows and its classifier call are within its call (issue 27 item 7, issue 38): their tokens sum to at most the call's prompt and completion tokens, and on a billed call the service-key rows' and the classifier's real cost to at most its engines part; exactly so when no judge or synthesis ran, for every attempt a seat was billed for is on its row.",
  charge_without_basis:
    'No charge without a receipt, a run or a refund: every call charge and cap credit has its receipt, every run charge and refund its run, and every entry that moves money for a request names it.',
  charge_differs_from_bill:
    "The ledger took what was billed: a call's charge less its cap credit equals its receipt's billed amount (a plan's call charges the balance nothing), a run's charge its billed amount and its refunds its refunded amount, never more than it was charged.",
  key_billed_twice:
    'No key billed twice: one idempotency key has at most one answered run (other than Form B runs that ended capped), a succeeded call is never superseded, and one advisor quote has at most one run that kept its charge.',
  run_charge_without_workflow:
    "Every run charged and not refunded has its workflow in Temporal (running while the run is; kept after its end for the namespace's retention).",
  workflow_task_failing:
    "No workflow is stuck on a failing task (issue 55): an open workflow's workflow task that failed (a nondeterminism error after a deploy, a workflow bug, a type no worker knows) and failed again on its retry makes no progress, so its call or run never ends, until its code is fixed or the workflow reset.",
  certified_without_coverage:
    'Every `certified` verdict has the coverage a verdict needs (answered questions overall and per bucket, issue 26 item 8).',
  listed_version_uncertified:
    'A listed mode certified by a live run at an earlier version is certified by a live run at its listed version too (published_version_uncertified); simulated (test key) runs certify nothing.',
  trial_deduction_mismatch:
    'An expired trial whose calls and runs in flight at the expiry have all settled deducted exactly its unused credit (spec 01 item 11, docs/money.md): the trial credit less the net spend from it (charges less cap credits and refunds since the trial began, up to the expiry, and those of the holds and runs open at the expiry), never below zero.',
  run_billed_off_quote:
    'A test run billed its quoted price (issue 38 items 8 and 9): its charge is the sum of the prices of its questions kept on the run.',
  certification_kept_without_verdict:
    'No verdict, no charge (issue 38 item 7): an ended certification kept its charge (billed − refunded = billed) when it ended completed with a verdict, and kept nothing otherwise.',
  plan_usage_mismatch:
    "A plan's usage equals its receipts: each settled row of plan_usage charged exactly its receipt's billed amount, and each plan call's receipt has its settled row.",
  mode_stats_mismatch:
    "A mode's running call count (the basis of its recorded fee rate, issue 42 item 3) equals its receipts recounted: per configuration and tier, the live API-key calls not paid by a plan, their tokens and their mode fees, and of them those that recorded round 1's seats asked and those that asked every seat (a first wave's share, issue 52).",
  key_spend_mismatch:
    "A key's running spend per month (what its monthly budget is judged against, issue 41 item 3) equals its calls' ledger entries recounted: per key and month the calls were made in, their net charges and what they still hold.",
  streamed_answer_differs:
    "What a call's caller was streamed is what its receipt records (issue 53 item 4): the answer's pieces stored as its engine wrote them, joined, begin the answer of its receipt (the rest is sent with the answer when the call ends).",
} as const;

export type Invariant = keyof typeof INVARIANTS;

/** One broken invariant: which, the ids to look at (organisation, request, run, workflow…), and what is wrong. */
export interface Violation {
  invariant: Invariant;
  ids: Record<string, string>;
  detail: string;
}

/** Which organisations an audit reads: all of them, or only these (a test's own). */
export interface AuditScope {
  orgIds?: readonly string[];
}

/** A violation as one line: the invariant, its ids, then what is wrong. */
export function violationLine(v: Violation): string {
  const ids = Object.entries(v.ids)
    .map(([k, id]) => `${k}=${id}`)
    .join(' ');
  return `${v.invariant}: ${ids} — ${v.detail}`;
}
