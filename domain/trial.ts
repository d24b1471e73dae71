/**
 * Trial credit (spec 01 item 11): a new organisation gets $5; any part unused after 30 days is deducted.
 *
 * "Unused" is defined as: the trial credit minus everything spent since the trial began, never below zero,
 * where "spent" is the net of charges (`charge`, `test_run_charge`) less `cap_credit` and `run_refund` credits. Spending is thus
 * taken from the trial credit first, so a top-up is never deducted while trial credit remains, and a spend
 * larger than the trial credit leaves nothing to deduct.
 *
 * Money held for a call in flight at the expiry is neither spent nor free: the call may spend some of it and give the
 * rest back. So the expiry deducts now only what stays unused whatever those calls spend (the unused part less what
 * they hold), and each of them, as it settles or is released, deducts what it leaves unused of the rest (the trial's
 * commitments, db/repositories/ledger.ts). A run charged up front before the expiry is spent; when it refunds after
 * it, the refund is trial credit unused, deducted the same way. In the end the deduction is exactly the unused part
 * with the calls in flight counted as spent from the trial first, and it only ever takes money that is free: never
 * the balance below zero, never money held for a call, never a top-up.
 */
export const TRIAL_CREDIT_MICROS = 5_000_000n;
export const TRIAL_PERIOD_MS = 30 * 24 * 60 * 60 * 1000;

export interface TrialExpiryInput {
  trialCreditMicros: bigint;
  /** Net spend since the trial began: charges minus cap credits and refunds (positive = money spent). */
  spentSinceStartMicros: bigint;
  /** Held for calls in flight at the expiry: they may yet spend it. */
  heldMicros: bigint;
  availableMicros: bigint;
}

const atLeastZero = (micros: bigint): bigint => (micros > 0n ? micros : 0n);
const least = (a: bigint, b: bigint): bigint => (a < b ? a : b);

export function unusedTrialCreditMicros(input: Pick<TrialExpiryInput, 'trialCreditMicros' | 'spentSinceStartMicros'>): bigint {
  return atLeastZero(input.trialCreditMicros - input.spentSinceStartMicros);
}

/** What the expiry removes from the balance at once: the unused part that no call in flight can still spend. */
export function trialExpiryDeductionMicros(input: TrialExpiryInput): bigint {
  return least(atLeastZero(unusedTrialCreditMicros(input) - input.heldMicros), atLeastZero(input.availableMicros));
}

/**
 * What is still to deduct when one of the trial's commitments settles: of `dueMicros` (the unused trial credit not yet
 * deducted, once this commitment's charge or refund is counted), what the holds still open at the expiry can no longer
 * spend; never more than is free.
 */
export function trialCatchUpMicros(input: { dueMicros: bigint; openHeldMicros: bigint; availableMicros: bigint }): bigint {
  return least(atLeastZero(input.dueMicros - input.openHeldMicros), atLeastZero(input.availableMicros));
}

/** When the trial's timer fires: its start plus the period. */
export function trialEndsAt(startedAt: Date, periodMs: number = TRIAL_PERIOD_MS): Date {
  return new Date(startedAt.getTime() + periodMs);
}
