import os from 'node:os';
import { randomUUID } from 'node:crypto';
import { keyMonthSpend } from '../db/repositories/api-keys';
import { holdAtOnce, settle } from '../db/repositories/ledger';
import { createOrganisation } from '../db/repositories/organisations';
import type { Db } from '../db/knex';
import { monthStartUtc } from '../domain/api-keys';
import { stack, startStack, stopStack } from '../test/harness/stack';
import { machine, writeResults } from './results';
import { fmt, summary } from './stats';

/**
 * A budgeted key's month as its budget check reads it (twice a call: the API's early check, and the hold under the
 * key's lock), at 0, 10,000 and 100,000 calls in the month: the running total (`key_month_spend`, migration 034) beside
 * the sum of the month's ledger entries each check ran before it. Then what the total costs a call's money writes: a
 * hold and its settle, with the ledger's trigger on and off, alternated.
 */
const READS = Number(process.env.BENCH_KEY_BUDGET_READS ?? 200);
const WRITES = Number(process.env.BENCH_KEY_BUDGET_WRITES ?? 300);
const HISTORY = [0, 10_000, 100_000];
const ROUNDS = 4;

/** `more` settled calls of the key this month, each with its hold, charge and release entries. */
async function addCalls(db: Db, orgId: string, keyId: string, from: number, more: number): Promise<void> {
  if (more === 0) return;
  await db.raw(
    `insert into requests (id, org_id, api_key_id, idempotency_key, workflow_id, fingerprint, mode_id, model, state)
     select 'req_kb_' || g, ?, ?, 'kb-' || g, 'kb-' || g, 'bench', 'quorum-panel', 'quorum-panel', 'succeeded'
       from generate_series(?::int, ?::int) g`,
    [orgId, keyId, from + 1, from + more],
  );
  await db.raw(
    `insert into ledger_entries (org_id, kind, amount_micros, reserved_delta_micros, request_id)
     select ?, k.kind, k.amount, k.held, 'req_kb_' || g
       from generate_series(?::int, ?::int) g,
            (values ('reservation', 0, 5000), ('charge', -1234, 0), ('release', 0, -5000)) as k(kind, amount, held)`,
    [orgId, from + 1, from + more],
  );
  await db.raw('analyze requests; analyze ledger_entries; analyze key_month_spend');
}

/** The sum each budget check ran before the running total: the month's calls of the key, their ledger entries. */
function recount(db: Db, orgId: string, keyId: string): Promise<unknown> {
  return db('ledger_entries as e')
    .join('requests as r', function () {
      this.on('r.id', '=', 'e.request_id').andOn('r.org_id', '=', 'e.org_id');
    })
    .where({ 'r.api_key_id': keyId, 'r.org_id': orgId })
    .where('r.created_at', '>=', monthStartUtc())
    .first(db.raw('coalesce(-sum(e.amount_micros), 0) as spent'), db.raw('coalesce(sum(e.reserved_delta_micros), 0) as held'));
}

async function timed(n: number, f: () => Promise<unknown>): Promise<ReturnType<typeof summary>> {
  for (let i = 0; i < Math.min(20, n); i++) await f();
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await f();
    ms.push(performance.now() - t);
  }
  return summary(ms);
}

/** A call's hold then its settle (two statements, as prepare and settle send them), on a new request of the key. */
async function holdAndSettle(db: Db, orgId: string, keyId: string): Promise<void> {
  const requestId = `req_${randomUUID()}`;
  await db('requests').insert({
    id: requestId,
    org_id: orgId,
    api_key_id: keyId,
    idempotency_key: requestId,
    workflow_id: requestId,
    fingerprint: 'bench',
    mode_id: 'quorum-panel',
    model: 'quorum-panel',
    state: 'running',
  });
  await holdAtOnce(db, { orgId, requestId, amountMicros: 5_000n });
  await settle(db, { orgId, requestId, chargeMicros: 1_234n });
}

async function main(): Promise<void> {
  const loadAtStart = os.loadavg();
  const date = new Date().toISOString();
  await startStack();
  const { db } = stack();
  const org = await createOrganisation(db, { name: 'Key budget bench', creditMicros: 1_000_000_000_000n });
  const reads: Record<string, unknown>[] = [];
  let calls = 0;
  for (const level of HISTORY) {
    await addCalls(db, org.orgId, org.keyId, calls, level - calls);
    calls = level;
    const total = await timed(READS, () => keyMonthSpend(db, { orgId: org.orgId, keyId: org.keyId, month: monthStartUtc() }));
    const before = await timed(Math.max(10, READS / 10), () => recount(db, org.orgId, org.keyId));
    console.log(
      `a key's month at ${level.toLocaleString('en')} calls: the running total p50 ${fmt(total.p50)} p99 ${fmt(total.p99)}; the sum each check ran before p50 ${fmt(before.p50)} p99 ${fmt(before.p99)}`,
    );
    reads.push({ calls: level, totalMs: total, sumBeforeMs: before });
  }
  // The trigger on and off, alternated: one run's drift falls on both.
  const writes: Record<'with' | 'without', number[]> = { with: [], without: [] };
  for (let round = 0; round < ROUNDS; round++)
    for (const on of [true, false]) {
      await db.raw(`alter table ledger_entries ${on ? 'enable' : 'disable'} trigger ledger_entries_key_month_spend`);
      writes[on ? 'with' : 'without'].push((await timed(WRITES, () => holdAndSettle(db, org.orgId, org.keyId))).p50);
    }
  await db.raw('alter table ledger_entries enable trigger ledger_entries_key_month_spend');
  console.log(
    `a call's request, hold and settle (3 statements), p50 of ${WRITES} in a row, ${ROUNDS} rounds alternated: with the total kept ${writes.with.map(fmt).join(', ')}; without ${writes.without.map(fmt).join(', ')}`,
  );
  await stopStack();
  writeResults('key-budget', {
    date,
    command: 'node --import tsx bench/key-budget.ts',
    machine: machine(loadAtStart),
    notes: "a budgeted key's month read as its budget check reads it, and a call's money writes with and without the total kept",
    figures: { reads, writesP50Ms: writes },
  });
}

main().catch(async (err: unknown) => {
  console.error(err);
  await stopStack();
  process.exit(1);
});
