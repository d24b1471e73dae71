import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { keyMonthSpend } from '../../../db/repositories/api-keys';
import { holdAtOnce, holdWithinKeyBudget, release, settle } from '../../../db/repositories/ledger';
import { monthStartUtc } from '../../../domain/api-keys';
import { stack } from '../../harness/stack';
import { newOrg } from '../deliberation/helpers';

/**
 * A key's month, as its budget reads it (migration 034): a running total the ledger keeps in the transaction of each
 * entry, one row however many calls the month had. Each case compares it with the figures written, computed here, in
 * a transaction rolled back after it: its calls have no workflow or receipt, which the suite's final audit would flag.
 */
describe("a key's spend per month, kept by the ledger", function () {
  this.timeout(60_000);
  const thisMonth = monthStartUtc();
  const lastMonth = new Date(Date.UTC(thisMonth.getUTCFullYear(), thisMonth.getUTCMonth() - 1, 1));

  /** `body` on a transaction of its own, rolled back after it. */
  async function rolledBack(body: (db: Knex.Transaction) => Promise<void>): Promise<void> {
    const trx = await stack().db.transaction();
    try {
      await body(trx);
    } finally {
      await trx.rollback();
    }
  }

  /** A request of the key, as the API claims it, made at `createdAt`. */
  async function request(db: Knex.Transaction, org: { orgId: string; keyId: string }, createdAt?: Date): Promise<string> {
    const id = `req_${randomUUID()}`;
    await db('requests').insert({
      id,
      org_id: org.orgId,
      api_key_id: org.keyId,
      idempotency_key: randomUUID(),
      workflow_id: `dlb/${id}`,
      fingerprint: 'f',
      mode_id: 'quorum-panel',
      model: 'quorum-panel',
      state: 'running',
      ...(createdAt && { created_at: createdAt }),
    });
    return id;
  }

  it('a hold counts as held, its settle as spent (a cap credit netted), a release as nothing', async () => {
    const org = await newOrg(10);
    await rolledBack(async (db) => {
      const [a, b, c] = [await request(db, org), await request(db, org), await request(db, org)];
      assert.equal(await holdAtOnce(db, { orgId: org.orgId, requestId: a, amountMicros: 300_000n }), 'held');
      assert.deepEqual(await keyMonthSpend(db, { ...org, month: thisMonth }), { spentMicros: 0n, heldMicros: 300_000n });
      await holdWithinKeyBudget(db, {
        orgId: org.orgId,
        requestId: b,
        amountMicros: 200_000n,
        keyId: org.keyId,
        budgetMicros: 10_000_000n,
      });
      await holdAtOnce(db, { orgId: org.orgId, requestId: c, amountMicros: 50_000n });
      await settle(db, { orgId: org.orgId, requestId: a, chargeMicros: 120_000n, capCreditMicros: 20_000n });
      await release(db, { orgId: org.orgId, requestId: c });
      assert.deepEqual(await keyMonthSpend(db, { ...org, month: thisMonth }), { spentMicros: 100_000n, heldMicros: 200_000n });
      // A retried settle writes no entry and moves nothing.
      await settle(db, { orgId: org.orgId, requestId: a, chargeMicros: 120_000n, capCreditMicros: 20_000n });
      await settle(db, { orgId: org.orgId, requestId: b, chargeMicros: 150_000n });
      assert.deepEqual(await keyMonthSpend(db, { ...org, month: thisMonth }), { spentMicros: 250_000n, heldMicros: 0n });
    });
  });

  it('a call counts in the month it was made in, settled after the month ended', async () => {
    const org = await newOrg(10);
    await rolledBack(async (db) => {
      const late = await request(db, org, new Date(thisMonth.getTime() - 60_000));
      await holdAtOnce(db, { orgId: org.orgId, requestId: late, amountMicros: 80_000n });
      await settle(db, { orgId: org.orgId, requestId: late, chargeMicros: 70_000n });
      assert.deepEqual(await keyMonthSpend(db, { ...org, month: lastMonth }), { spentMicros: 70_000n, heldMicros: 0n });
      assert.deepEqual(await keyMonthSpend(db, { ...org, month: thisMonth }), { spentMicros: 0n, heldMicros: 0n });
    });
  });

  it("the budget refuses the hold that would pass it, from the month's total", async () => {
    const org = await newOrg(10);
    await rolledBack(async (db) => {
      const budget = { keyId: org.keyId, budgetMicros: 1_000_000n };
      const first = await request(db, org);
      assert.deepEqual(await holdWithinKeyBudget(db, { orgId: org.orgId, requestId: first, amountMicros: 600_000n, ...budget }), {
        held: true,
      });
      await settle(db, { orgId: org.orgId, requestId: first, chargeMicros: 500_000n });
      const second = await request(db, org);
      assert.deepEqual(await holdWithinKeyBudget(db, { orgId: org.orgId, requestId: second, amountMicros: 400_000n, ...budget }), {
        held: true,
      });
      // 500,000 spent + 400,000 held + 100,001 > 1,000,000.
      const third = await request(db, org);
      assert.deepEqual(await holdWithinKeyBudget(db, { orgId: org.orgId, requestId: third, amountMicros: 100_001n, ...budget }), {
        held: false,
        figures: { budgetMicros: 1_000_000n, spentMicros: 500_000n, heldMicros: 400_000n },
      });
      assert.deepEqual(await holdWithinKeyBudget(db, { orgId: org.orgId, requestId: third, amountMicros: 100_000n, ...budget }), {
        held: true,
      });
    });
  });
});
