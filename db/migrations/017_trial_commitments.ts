import type { Knex } from 'knex';

/**
 * The trial credit's expiry settles in full (issue 26 item 6; spec 01 item 11: any unused part is deducted). At the
 * expiry, money held for calls in flight and the up-front charges of runs still going may yet come back: those are the
 * trial's open commitments, one row each. `balances.trial_due_micros` is what of the unused trial credit the expiry
 * could not deduct yet (negative: spent beyond it, which a refund may bring back); null once no commitment is open.
 * Each commitment, as it settles, is released or refunded, deducts what it freed of that in the same transaction
 * (db/repositories/ledger.ts, `postEntries`), so no money is deducted twice and none escapes the expiry.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('balances', (t) => {
    t.bigInteger('trial_due_micros');
  });
  await knex.schema.createTable('trial_commitments', (t) => {
    t.text('org_id').notNullable().references('organisations.id').onDelete('CASCADE');
    // A call's request id (its hold) or a run's id (its up-front charge).
    t.text('request_id').notNullable();
    t.text('kind').notNullable();
    // What it held (a hold) or was charged (a run) at the expiry.
    t.bigInteger('amount_micros').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['org_id', 'request_id']);
    t.check("kind in ('hold','run')", [], 'trial_commitments_kind_check');
    t.check('amount_micros >= 0', [], 'trial_commitments_amount_check');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('trial_commitments');
  await knex.schema.alterTable('balances', (t) => {
    t.dropColumn('trial_due_micros');
  });
}
