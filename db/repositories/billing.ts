import {
  BILLING_REFUSAL_MESSAGES,
  isBillingRefusal,
  type Billing,
  type BillingRefusal,
  type BillingSettings,
  type OrganisationStatus,
} from '../../domain/billing';
import { QuorumError } from '../../domain/errors';
import type { DbOrTrx } from './shared';

/** Organisation billing states, as operators set them (db/migrations/013_billing_states.ts has the rule). */

/** The billing state refusing `amountMicros` more billed work for the organisation now, if one does. */
export async function billingRefusal(db: DbOrTrx, orgId: string, amountMicros: bigint): Promise<BillingRefusal | undefined> {
  const { rows } = await db.raw<{ rows: { refusal: string | null }[] }>('select billing_refusal(?, ?) as refusal', [
    orgId,
    amountMicros.toString(),
  ]);
  return asRefusal(rows[0]?.refusal ?? null);
}

/** `billing_refusal`'s answer as a code; anything else it could say is a bug, not a refusal to pass on. */
export function asRefusal(answer: string | null): BillingRefusal | undefined {
  if (answer === null) return undefined;
  if (!isBillingRefusal(answer)) throw new Error(`billing_refusal answered ${JSON.stringify(answer)}`);
  return answer;
}

export const billingRefusalError = (code: BillingRefusal): QuorumError => new QuorumError(code, BILLING_REFUSAL_MESSAGES[code]);

export interface OrganisationBilling extends BillingSettings {
  orgId: string;
  name: string;
  status: OrganisationStatus;
  spentThisMonthMicros: bigint;
  spentTotalMicros: bigint;
}

/** One operator change; activation is a moment, so setting an allowance again puts the organisation back before it. */
export type BillingChange =
  { billing: Billing } | { activationAllowanceMicros: bigint } | { activate: true } | { monthlyQuotaMicros: bigint | null };

interface BillingRow {
  id: string;
  name: string;
  status: OrganisationStatus;
  billing: Billing;
  activation_allowance_micros: bigint | null;
  activated_at: Date | null;
  monthly_quota_micros: bigint | null;
  spent_month: bigint;
  spent_total: bigint;
}

export async function getBilling(db: DbOrTrx, orgId: string): Promise<OrganisationBilling> {
  const row = (await db('organisations')
    .where({ id: orgId })
    .first(
      'id',
      'name',
      'status',
      'billing',
      'activation_allowance_micros',
      'activated_at',
      'monthly_quota_micros',
      db.raw(`billing_spent(id, date_trunc('month', now(), 'UTC')) as spent_month`),
      db.raw(`billing_spent(id, '-infinity') as spent_total`),
    )) as BillingRow | undefined;
  if (!row) throw new QuorumError('not_found', `no organisation ${orgId}`);
  return {
    orgId: row.id,
    name: row.name,
    status: row.status,
    billing: row.billing,
    activationAllowanceMicros: row.activation_allowance_micros,
    activatedAt: row.activated_at,
    monthlyQuotaMicros: row.monthly_quota_micros,
    spentThisMonthMicros: row.spent_month,
    spentTotalMicros: row.spent_total,
  };
}

function columnsOf(db: DbOrTrx, change: BillingChange): Record<string, unknown> {
  if ('billing' in change) return { billing: change.billing };
  if ('activate' in change) return { activated_at: db.raw('coalesce(activated_at, now())') };
  if ('activationAllowanceMicros' in change)
    return { activation_allowance_micros: change.activationAllowanceMicros.toString(), activated_at: null };
  return { monthly_quota_micros: change.monthlyQuotaMicros?.toString() ?? null };
}

/** Applies an operator's change; calls already holding their money finish, the next billed work sees it. */
export async function setBilling(db: DbOrTrx, orgId: string, change: BillingChange): Promise<void> {
  const updated = await db('organisations').where({ id: orgId }).update(columnsOf(db, change));
  if (updated === 0) throw new QuorumError('not_found', `no organisation ${orgId}`);
}
