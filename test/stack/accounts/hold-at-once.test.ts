import assert from 'node:assert/strict';
import { createOrganisation } from '../../../db/repositories/organisations';
import { getBalance, holdAtOnce, listLedger } from '../../../db/repositories/ledger';
import { TRIAL_CREDIT_MICROS } from '../../../domain/trial';
import { releaseHolds } from '../../harness/audit';
import { stack } from '../../harness/stack';
import { assertLedgerMatchesBalance } from './fixtures/helpers';

// The $5 trial credit covers exactly ten of these.
const TENTH = TRIAL_CREDIT_MICROS / 10n;

/**
 * A call's hold in one statement (issue 31): the same guarantees as `reserve` — never an overspend under any
 * concurrency, one reservation per request id ever, a refusal writes nothing — without a transaction around it.
 */
describe('accounts: a hold in one statement', () => {
  it('50 concurrent holds against a balance covering 10 → exactly 10 held, the rest refused with nothing written', async () => {
    const { db } = stack();
    const { orgId } = await createOrganisation(db, { name: 'Race At Once Co' });
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => holdAtOnce(db, { orgId, requestId: `once-${i}`, amountMicros: TENTH })),
    );
    assert.equal(results.filter((r) => r === 'held').length, 10);
    assert.equal(results.filter((r) => r === 'refused').length, 40);
    assert.deepEqual(await getBalance(db, orgId), {
      balanceMicros: TRIAL_CREDIT_MICROS,
      reservedMicros: TRIAL_CREDIT_MICROS,
      availableMicros: 0n,
    });
    const held = results.flatMap((r, i) => (r === 'held' ? [`once-${i}`] : []));
    const rows = (await db('reservations').where({ org_id: orgId }).orderBy('request_id')) as { request_id: string; state: string }[];
    assert.deepEqual(rows.map((r) => r.request_id).sort(), held.sort(), 'a reservation row for each hold, none for a refusal');
    await assertLedgerMatchesBalance(db, orgId);
    await releaseHolds(orgId);
  });

  it('one request held by many attempts at once, and again later: one reservation, one entry, held once', async () => {
    const { db } = stack();
    const { orgId } = await createOrganisation(db, { name: 'Retry At Once Co' });
    const hold = { orgId, requestId: 'once-retried', amountMicros: TENTH };
    const results = await Promise.all(Array.from({ length: 12 }, () => holdAtOnce(db, hold)));
    assert.equal(results.filter((r) => r === 'held').length, 1, results.join(','));
    assert.equal(results.filter((r) => r === 'exists').length, 11, results.join(','));
    assert.equal(await holdAtOnce(db, hold), 'exists');
    assert.equal((await getBalance(db, orgId)).reservedMicros, TENTH);
    const entries = (await listLedger(db, orgId, 20)).filter((e) => e.requestId === 'once-retried');
    assert.deepEqual(
      entries.map((e) => [e.kind, e.reservedDeltaMicros]),
      [['reservation', TENTH]],
    );
    await assertLedgerMatchesBalance(db, orgId);
    await releaseHolds(orgId);
  });

  it('an unknown organisation is refused, and nothing is written', async () => {
    const { db } = stack();
    assert.equal(await holdAtOnce(db, { orgId: 'org_nobody', requestId: 'once-nobody', amountMicros: 1n }), 'refused');
    assert.equal((await db('reservations').where({ request_id: 'once-nobody' })).length, 0);
  });
});
