import { QuorumError } from '../../domain/errors';
import { trialExpiryDeductionMicros } from '../../domain/trial';
import { postEntries } from './ledger';
import type { DbOrTrx } from './shared';

export interface TrialExpiry {
  deductedMicros: bigint;
  /** True when an earlier call already expired the trial (this one changed nothing). */
  alreadyExpired: boolean;
}

/**
 * Deducts the unused trial credit (definition in domain/trial.ts) once. The organisation and balance rows are locked
 * so spend, availability and the deduction are read and written consistently; a repeat returns the first result.
 */
export async function expireTrialCredit(db: DbOrTrx, orgId: string): Promise<TrialExpiry> {
  return db.transaction(async (trx) => {
    const org = (await trx('organisations')
      .where({ id: orgId })
      .forUpdate()
      .first('trial_credit_micros', 'trial_started_at', 'trial_expired_at')) as
      { trial_credit_micros: bigint; trial_started_at: Date; trial_expired_at: Date | null } | undefined;
    if (!org) throw new QuorumError('not_found', `no organisation ${orgId}`);
    if (org.trial_expired_at) {
      const entry = (await trx('ledger_entries').where({ org_id: orgId, kind: 'trial_expiry' }).first('amount_micros')) as
        { amount_micros: bigint } | undefined;
      return { deductedMicros: -(entry?.amount_micros ?? 0n), alreadyExpired: true };
    }
    const balance = (await trx('balances').where({ org_id: orgId }).forUpdate().first('balance_micros', 'reserved_micros')) as {
      balance_micros: bigint;
      reserved_micros: bigint;
    };
    const spent = await trx.raw<{ rows: { spent: bigint }[] }>(
      `select coalesce(-sum(amount_micros), 0)::bigint as spent from ledger_entries
        where org_id = ? and kind in ('charge', 'test_run_charge', 'cap_credit', 'run_refund') and created_at >= ?`,
      [orgId, org.trial_started_at],
    );
    const deduction = trialExpiryDeductionMicros({
      trialCreditMicros: org.trial_credit_micros,
      spentSinceStartMicros: spent.rows[0].spent,
      availableMicros: balance.balance_micros - balance.reserved_micros,
    });
    // Recorded even when zero, so the ledger shows the trial ended.
    const posted = await postEntries(trx, orgId, [
      { kind: 'trial_expiry', amountMicros: -deduction, requestId: 'trial_expiry', note: 'unused trial credit' },
    ]);
    if (!posted) throw new Error(`trial deduction for ${orgId} exceeded the locked available balance`);
    await trx('organisations').where({ id: orgId }).update({ trial_expired_at: trx.fn.now() });
    return { deductedMicros: deduction, alreadyExpired: false };
  });
}

/** Organisations whose trial timer may not exist yet (created while Temporal was unreachable). */
export async function listOrganisationsAwaitingTrialTimer(db: DbOrTrx): Promise<{ orgId: string; trialStartedAt: Date }[]> {
  const rows = (await db('organisations')
    .whereNull('trial_timer_started_at')
    .whereNull('trial_expired_at')
    .where('trial_credit_micros', '>', 0)
    .orderBy('trial_started_at')
    .select('id', 'trial_started_at')) as { id: string; trial_started_at: Date }[];
  return rows.map((r) => ({ orgId: r.id, trialStartedAt: r.trial_started_at }));
}

export async function markTrialTimerStarted(db: DbOrTrx, orgId: string): Promise<void> {
  await db('organisations').where({ id: orgId }).whereNull('trial_timer_started_at').update({ trial_timer_started_at: db.fn.now() });
}
