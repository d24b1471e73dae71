/**
 * Trial credit (spec 01 item 11): a new organisation gets $5; any part unused after 30 days is deducted.
 *
 * "Unused" is defined as: the trial credit minus everything spent since the trial began, never below zero,
 * where "spent" is the net of charges (`charge`, `test_run_charge`) less `cap_credit` and `run_refund` credits. Spending is thus
 * taken from the trial credit first, so a top-up is never deducted while trial credit remains, and a spend
 * larger than the trial credit leaves nothing to deduct.
 *
 * The deduction is further limited to the available balance (balance − reserved): it can never take the
 * balance below zero, nor below money held for calls in flight.
 */
export const TRIAL_CREDIT_MICROS = 5_000_000n;
export const TRIAL_PERIOD_MS = 30 * 24 * 60 * 60 * 1000;

export interface TrialExpiryInput {
  trialCreditMicros: bigint;
  /** Net spend since the trial began: charges minus cap credits (positive = money spent). */
  spentSinceStartMicros: bigint;
  availableMicros: bigint;
}

export function unusedTrialCreditMicros(input: Pick<TrialExpiryInput, 'trialCreditMicros' | 'spentSinceStartMicros'>): bigint {
  const unused = input.trialCreditMicros - input.spentSinceStartMicros;
  return unused > 0n ? unused : 0n;
}

/** The amount the trial expiry removes from the balance. */
export function trialExpiryDeductionMicros(input: TrialExpiryInput): bigint {
  const unused = unusedTrialCreditMicros(input);
  const available = input.availableMicros > 0n ? input.availableMicros : 0n;
  return unused < available ? unused : available;
}

/** When the trial's timer fires: its start plus the period. */
export function trialEndsAt(startedAt: Date, periodMs: number = TRIAL_PERIOD_MS): Date {
  return new Date(startedAt.getTime() + periodMs);
}
