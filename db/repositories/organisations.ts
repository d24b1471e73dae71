import { randomBase62, SCOPES } from '../../domain/api-keys';
import type { OrganisationStatus } from '../../domain/billing';
import { QuorumError } from '../../domain/errors';
import { TRIAL_CREDIT_MICROS } from '../../domain/trial';
import { createApiKey } from './api-keys';
import { createBalance, postEntries, type NewLedgerEntry } from './ledger';
import type { DbOrTrx } from './shared';

export interface CreatedOrganisation {
  orgId: string;
  /** The owner's live key with every scope; shown once. */
  apiKey: string;
  keyId: string;
  balanceMicros: bigint;
  trialStartedAt: Date;
}

export type NewOrganisation = Omit<CreatedOrganisation, 'apiKey' | 'keyId'>;

/**
 * The organisation, its balance with the $5 trial credit and an optional prepaid top-up of `creditMicros`, in one
 * transaction (the caller's when `db` is one). The trial-expiry timer is started by the caller (it needs Temporal).
 */
export async function insertOrganisation(
  db: DbOrTrx,
  input: { name: string; creditMicros?: bigint; orgId?: string },
): Promise<NewOrganisation> {
  const name = input.name.trim();
  if (!name) throw new QuorumError('invalid_request', 'an organisation needs a name', { param: 'name' });
  const credit = input.creditMicros ?? 0n;
  if (credit < 0n) throw new QuorumError('invalid_request', 'credit must not be negative', { param: 'creditMicros' });
  const orgId = input.orgId ?? `org_${randomBase62(20)}`;
  return db.transaction(async (trx) => {
    const [org] = (await trx('organisations')
      .insert({ id: orgId, name, trial_credit_micros: TRIAL_CREDIT_MICROS.toString() })
      .returning('trial_started_at')) as { trial_started_at: Date }[];
    await createBalance(trx, orgId);
    const entries: NewLedgerEntry[] = [{ kind: 'trial_credit', amountMicros: TRIAL_CREDIT_MICROS, note: 'trial credit' }];
    if (credit > 0n) entries.push({ kind: 'top_up', amountMicros: credit, note: 'initial credit' });
    const balance = await postEntries(trx, orgId, entries);
    if (!balance) throw new Error(`balance row for ${orgId} vanished inside its own transaction`);
    return { orgId, balanceMicros: balance.balanceMicros, trialStartedAt: org.trial_started_at };
  });
}

/** An organisation (as `insertOrganisation`) with `personId` as its owner, in one transaction (the caller's when `db` is one). */
export async function insertOwnedOrganisation(db: DbOrTrx, personId: string, name: string): Promise<NewOrganisation> {
  return db.transaction(async (trx) => {
    const org = await insertOrganisation(trx, { name });
    await trx('memberships').insert({ person_id: personId, org_id: org.orgId, role: 'owner' });
    return org;
  });
}

/** Operator onboarding (spec 01 item 12) in one transaction: the organisation and its owner's key, shown once. */
export async function createOrganisation(
  db: DbOrTrx,
  input: { name: string; creditMicros?: bigint; orgId?: string },
): Promise<CreatedOrganisation> {
  return db.transaction(async (trx) => {
    const org = await insertOrganisation(trx, input);
    const { keyId, apiKey } = await createApiKey(trx, { orgId: org.orgId, keyKind: 'live', scopes: SCOPES, isOwner: true });
    return { ...org, apiKey, keyId };
  });
}

export async function setOrganisationStatus(db: DbOrTrx, orgId: string, status: OrganisationStatus): Promise<void> {
  const updated = await db('organisations').where({ id: orgId }).update({ status });
  if (updated === 0) throw new QuorumError('not_found', `no organisation ${orgId}`);
}

export async function organisationExists(db: DbOrTrx, orgId: string): Promise<boolean> {
  return (await db('organisations').where({ id: orgId }).first('id')) !== undefined;
}

export async function organisationStatus(db: DbOrTrx, orgId: string): Promise<OrganisationStatus | undefined> {
  const row = (await db('organisations').where({ id: orgId }).first('status')) as { status: OrganisationStatus } | undefined;
  return row?.status;
}
