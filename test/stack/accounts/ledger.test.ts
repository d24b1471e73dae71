import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createOrganisation } from '../../../db/repositories/organisations';
import { getBalance, listLedger, release, reserve, settle, topUp } from '../../../db/repositories/ledger';
import { QuorumError } from '../../../domain/errors';
import { usdToMicros } from '../../../domain/money';
import { TRIAL_CREDIT_MICROS } from '../../../domain/trial';
import { exemptFromAudit, releaseHolds } from '../../harness/audit';
import { stack } from '../../harness/stack';
import { assertLedgerMatchesBalance } from './fixtures/helpers';

const isCode = (code: string) => (err: unknown) => err instanceof QuorumError && err.code === code;
// The $5 trial credit covers exactly ten of these.
const TENTH = TRIAL_CREDIT_MICROS / 10n;

describe('accounts: ledger and reservations', () => {
  it('a new organisation holds exactly the $5 trial credit, in the ledger too', async () => {
    const { db } = stack();
    const org = await createOrganisation(db, { name: 'Trial Co' });
    assert.equal(org.balanceMicros, 5_000_000n);
    const entries = await listLedger(db, org.orgId, 10);
    assert.deepEqual(
      entries.map((e) => [e.kind, e.amountMicros]),
      [['trial_credit', 5_000_000n]],
    );
    await assertLedgerMatchesBalance(db, org.orgId);
  });

  it('50 concurrent reservations against a balance covering 10 → exactly 10 succeed', async () => {
    const { db } = stack();
    const { orgId } = await createOrganisation(db, { name: 'Race Co' });
    const results = await Promise.allSettled(
      Array.from({ length: 50 }, (_, i) => reserve(db, { orgId, requestId: `race-${i}`, amountMicros: TENTH })),
    );
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 10);
    for (const r of results) if (r.status === 'rejected') assert.ok(isCode('insufficient_balance')(r.reason), String(r.reason));
    const balance = await getBalance(db, orgId);
    assert.deepEqual(balance, { balanceMicros: TRIAL_CREDIT_MICROS, reservedMicros: TRIAL_CREDIT_MICROS, availableMicros: 0n });
    await assertLedgerMatchesBalance(db, orgId);
    // The holds' requests are made up: given back, so no hold outlives them.
    await releaseHolds(orgId);
  });

  it('holds across two separate processes racing on one balance', async function () {
    this.timeout(60_000);
    const { db, dbUrl } = stack();
    const { orgId } = await createOrganisation(db, { name: 'Two Process Co' });
    const script = path.join(__dirname, 'fixtures', 'race-child.ts');
    const children = ['a', 'b'].map((prefix) =>
      spawn(process.execPath, ['--import', 'tsx', script, dbUrl, orgId, `proc-${prefix}`, '25', TENTH.toString()], {
        stdio: ['pipe', 'pipe', 'inherit'],
      }),
    );
    const lines = children.map((child) => {
      const out: string[] = [];
      let buffered = '';
      const waiters: ((line: string) => void)[] = [];
      child.stdout.on('data', (chunk: Buffer) => {
        buffered += chunk.toString();
        let nl: number;
        while ((nl = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, nl);
          buffered = buffered.slice(nl + 1);
          const waiter = waiters.shift();
          if (waiter) waiter(line);
          else out.push(line);
        }
      });
      return (): Promise<string> => (out.length ? Promise.resolve(out.shift() as string) : new Promise((resolve) => waiters.push(resolve)));
    });
    assert.deepEqual(await Promise.all(lines.map((next) => next())), ['ready', 'ready']);
    for (const child of children) child.stdin.write('go\n');
    const reports = (await Promise.all(lines.map((next) => next()))).map(
      (l) => JSON.parse(l) as { ok: number; insufficient: number; other: number },
    );
    // A child may have exited already: its 'exit' event would never come again.
    await Promise.all(
      children.map((c) => (c.exitCode !== null || c.signalCode !== null ? undefined : new Promise((resolve) => c.once('exit', resolve)))),
    );
    assert.equal(reports[0].ok + reports[1].ok, 10, JSON.stringify(reports));
    assert.equal(reports[0].insufficient + reports[1].insufficient, 40);
    assert.equal(reports[0].other + reports[1].other, 0);
    assert.equal((await getBalance(db, orgId)).availableMicros, 0n);
    await assertLedgerMatchesBalance(db, orgId);
    await releaseHolds(orgId);
  });

  it('reserve is idempotent per request id', async () => {
    const { db } = stack();
    const { orgId } = await createOrganisation(db, { name: 'Idem Co' });
    await Promise.all([1, 2, 3].map(() => reserve(db, { orgId, requestId: 'same', amountMicros: 1_000_000n })));
    assert.equal((await getBalance(db, orgId)).reservedMicros, 1_000_000n);
    await assertLedgerMatchesBalance(db, orgId);
    await releaseHolds(orgId);
  });

  it('settle charges actual, releases the rest, credits the cap, and a second settle changes nothing', async () => {
    const { db } = stack();
    const { orgId } = await createOrganisation(db, { name: 'Settle Co' });
    exemptFromAudit(orgId, ['charge_without_basis'], 'the ledger’s settle itself: a charge under a made-up request id, no receipt');
    await reserve(db, { orgId, requestId: 'r1', amountMicros: 2_000_000n });
    const first = await Promise.all(
      [1, 2].map(() => settle(db, { orgId, requestId: 'r1', chargeMicros: 2_500_000n, capCreditMicros: 500_000n })),
    );
    assert.deepEqual(first.map((r) => r.alreadySettled).sort(), [false, true]);
    assert.deepEqual(await settle(db, { orgId, requestId: 'r1', chargeMicros: 9n }), { alreadySettled: true });
    await release(db, { orgId, requestId: 'r1' });
    assert.deepEqual(await getBalance(db, orgId), { balanceMicros: 3_000_000n, reservedMicros: 0n, availableMicros: 3_000_000n });
    const kinds = (await listLedger(db, orgId, 10)).map((e) => e.kind).reverse();
    assert.deepEqual(kinds, ['trial_credit', 'reservation', 'release', 'charge', 'cap_credit']);
    await assertLedgerMatchesBalance(db, orgId);
  });

  it('release gives the hold back once; settle without a hold charges only what is available', async () => {
    const { db } = stack();
    const { orgId } = await createOrganisation(db, { name: 'Release Co' });
    exemptFromAudit(orgId, ['charge_without_basis'], 'the ledger’s settle itself: a run charge under a made-up id, no run');
    await reserve(db, { orgId, requestId: 'r2', amountMicros: 4_000_000n });
    await Promise.all([release(db, { orgId, requestId: 'r2' }), release(db, { orgId, requestId: 'r2' })]);
    assert.equal((await getBalance(db, orgId)).reservedMicros, 0n);
    await assert.rejects(
      settle(db, { orgId, requestId: 'direct', chargeMicros: 6_000_000n, kind: 'test_run_charge' }),
      isCode('insufficient_balance'),
    );
    await settle(db, { orgId, requestId: 'direct', chargeMicros: 1_000_000n, kind: 'test_run_charge' });
    assert.equal((await getBalance(db, orgId)).balanceMicros, 4_000_000n);
    await assertLedgerMatchesBalance(db, orgId);
  });

  it('top-ups add money; bad amounts and unknown organisations are refused', async () => {
    const { db } = stack();
    const { orgId } = await createOrganisation(db, { name: 'TopUp Co', creditMicros: usdToMicros('10') });
    assert.equal((await topUp(db, { orgId, amountMicros: usdToMicros('0.000001') })).balanceMicros, 15_000_001n);
    await assert.rejects(topUp(db, { orgId, amountMicros: 0n }), isCode('invalid_request'));
    await assert.rejects(reserve(db, { orgId, requestId: 'neg', amountMicros: -1n }), isCode('invalid_request'));
    await assert.rejects(reserve(db, { orgId: 'org_missing', requestId: 'x', amountMicros: 1n }), isCode('not_found'));
    await assert.rejects(topUp(db, { orgId: 'org_missing', amountMicros: 1n }), isCode('not_found'));
    await assertLedgerMatchesBalance(db, orgId);
  });

  it('the database itself refuses an overspend and any edit of the ledger', async () => {
    const { db } = stack();
    const { orgId } = await createOrganisation(db, { name: 'Guard Co' });
    await assert.rejects(db('balances').where({ org_id: orgId }).update({ reserved_micros: 6_000_000 }), /balances_no_overspend_check/);
    await assert.rejects(db('ledger_entries').where({ org_id: orgId }).update({ amount_micros: 1 }), /append-only/);
    await assert.rejects(db('ledger_entries').where({ org_id: orgId }).delete(), /append-only/);
  });
});
