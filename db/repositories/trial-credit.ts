import { QuorumError } from '../../domain/errors';
import { trialExpiryDeductionMicros, unusedTrialCreditMicros } from '../../domain/trial';
import { postEntries } from './ledger';
import type { DbOrTrx } from './shared';

export interface TrialExpiry {
  deductedMicros: bigint;
  /** True when an earlier call already expired the trial (this one changed nothing). */
  alreadyExpired: boolean;
}

/** Runs whose up-front charge may still be refunded. */
const RUNNING_RUN_STATES = ['launching', 'queued', 'running', 'judging'] as const;

/**
 * Deducts the unused trial credit (definition in domain/trial.ts) once: now, what no call in flight can still spend;
 * the rest as each of them settles. The holds and the runs still going are recorded as the trial's commitments, with
 * what the expiry left to deduct (`balances.trial_due_micros`); `postEntries` deducts from each as it settles. The
 * organisation and balance rows are locked so spend, holds and the deduction are read and written consistently (a hold
 * or a run charge takes the balance row's lock too); a repeat returns the first result.
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
      const entry = (await trx('ledger_entries')
        .where({ org_id: orgId, kind: 'trial_expiry', request_id: 'trial_expiry' })
        .first('amount_micros')) as { amount_micros: bigint } | undefined;
      return { deductedMicros: -(entry?.amount_micros ?? 0n), alreadyExpired: true };
    }
    const balance = (await trx('balances').where({ org_id: orgId }).forUpdate().first('balance_micros', 'reserved_micros')) as {
      balance_micros: bigint;
      reserved_micros: bigint;
    };
    const spentMicros = await spentSince(trx, orgId, org.trial_started_at);
    const holds = (await trx('reservations').where({ org_id: orgId, state: 'held' }).select('request_id', 'amount_micros')) as {
      request_id: string;
      amount_micros: bigint;
    }[];
    const runs = (await trx('runs')
      .where({ org_id: orgId })
      .whereIn('state', RUNNING_RUN_STATES)
      .where('billed_micros', '>', 0)
      .select('id', 'billed_micros')) as { id: string; billed_micros: bigint }[];
    const deduction = trialExpiryDeductionMicros({
      trialCreditMicros: org.trial_credit_micros,
      spentSinceStartMicros: spentMicros,
      heldMicros: holds.reduce((sum, h) => sum + h.amount_micros, 0n),
      availableMicros: balance.balance_micros - balance.reserved_micros,
    });
    // Recorded even when zero, so the ledger shows the trial ended.
    const posted = await postEntries(trx, orgId, [
      { kind: 'trial_expiry', amountMicros: -deduction, requestId: 'trial_expiry', note: 'unused trial credit' },
    ]);
    if (!posted) throw new Error(`trial deduction for ${orgId} exceeded the locked available balance`);
    if (holds.length + runs.length > 0) {
      await trx('trial_commitments').insert([
        ...holds.map((h) => ({ org_id: orgId, request_id: h.request_id, kind: 'hold', amount_micros: h.amount_micros.toString() })),
        ...runs.map((r) => ({ org_id: orgId, request_id: r.id, kind: 'run', amount_micros: r.billed_micros.toString() })),
      ]);
      // Negative when more than the trial credit was spent: a refund may yet bring part of it back unused.
      const due = org.trial_credit_micros - spentMicros - deduction;
      await trx('balances').where({ org_id: orgId }).update({ trial_due_micros: due.toString() });
    }
    await trx('organisations').where({ id: orgId }).update({ trial_expired_at: trx.fn.now() });
    return { deductedMicros: deduction, alreadyExpired: false };
  });
}

/** Net spend since `since`: charges less cap credits and refunds (domain/trial.ts). */
async function spentSince(db: DbOrTrx, orgId: string, since: Date): Promise<bigint> {
  const { rows } = await db.raw<{ rows: { spent: bigint }[] }>(
    `select coalesce(-sum(amount_micros), 0)::bigint as spent from ledger_entries
      where org_id = ? and kind in ('charge', 'test_run_charge', 'cap_credit', 'run_refund') and created_at >= ?`,
    [orgId, since],
  );
  return rows[0].spent;
}

/** An organisation's trial as it stands: the credit granted, when it began and ended, and what of it is unused. */
export interface TrialStanding {
  creditMicros: bigint;
  startedAt: Date;
  /** When the expiry ran (its deduction is in the ledger); null while the trial lasts. */
  expiredAt: Date | null;
  /** The unused credit (domain/trial.ts) while the trial lasts; 0 once it has expired. */
  unusedMicros: bigint;
}

export async function trialStanding(db: DbOrTrx, orgId: string): Promise<TrialStanding> {
  const org = (await db('organisations').where({ id: orgId }).first('trial_credit_micros', 'trial_started_at', 'trial_expired_at')) as
    { trial_credit_micros: bigint; trial_started_at: Date; trial_expired_at: Date | null } | undefined;
  if (!org) throw new QuorumError('not_found', `no organisation ${orgId}`);
  const unused = org.trial_expired_at
    ? 0n
    : unusedTrialCreditMicros({
        trialCreditMicros: org.trial_credit_micros,
        spentSinceStartMicros: await spentSince(db, orgId, org.trial_started_at),
      });
  return { creditMicros: org.trial_credit_micros, startedAt: org.trial_started_at, expiredAt: org.trial_expired_at, unusedMicros: unused };
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
