import type { Knex } from 'knex';
import { unknownOrgAsNotFound, type DbOrTrx } from './shared';

/**
 * The organisation's alert and retention settings (issue 41 items 4 and 5, migration 030): the webhook URL its
 * account events go to, the `balance.low` threshold (kept on the balance row the charges update) and the
 * transcript retention (null: the default).
 */
export interface AccountSettings {
  webhookUrl: string | null;
  lowBalanceMicros: bigint;
  retentionDays: number | null;
}

/** `lock`: the rows held until the transaction `db` is ends, for a change read from them. */
export async function accountSettings(db: DbOrTrx, orgId: string, opts: { lock?: boolean } = {}): Promise<AccountSettings | undefined> {
  const query = db('organisations as o').join('balances as b', 'b.org_id', 'o.id').where('o.id', orgId);
  if (opts.lock) query.forUpdate();
  const row = (await query.first('o.webhook_url', 'o.transcript_retention_days', 'b.low_balance_micros')) as
    { webhook_url: string | null; transcript_retention_days: number | null; low_balance_micros: bigint } | undefined;
  return row && { webhookUrl: row.webhook_url, lowBalanceMicros: row.low_balance_micros, retentionDays: row.transcript_retention_days };
}

/**
 * All three at once, as the owner's form sends them. A new threshold re-arms `balance.low`: the next charge below it
 * alerts, even when the last fall did.
 */
export async function saveAccountSettings(db: Knex, orgId: string, settings: AccountSettings): Promise<void> {
  await unknownOrgAsNotFound(orgId, () =>
    db.transaction(async (trx) => {
      await trx('organisations')
        .where({ id: orgId })
        .update({ webhook_url: settings.webhookUrl, transcript_retention_days: settings.retentionDays });
      await trx('balances')
        .where({ org_id: orgId })
        .whereNot({ low_balance_micros: settings.lowBalanceMicros.toString() })
        .update({ low_balance_micros: settings.lowBalanceMicros.toString(), low_alerted: false });
    }),
  );
}
