import fc from 'fast-check';
import assert from 'node:assert/strict';
import { createAccountActivities } from '../../../activities/accounts';
import { getBalance, listLedger, reserve, settle, topUp } from '../../../db/repositories/ledger';
import { createOrganisation } from '../../../db/repositories/organisations';
import { expireTrialCredit } from '../../../db/repositories/trial-credit';
import { usdToMicros } from '../../../domain/money';
import { TRIAL_CREDIT_MICROS, trialExpiryDeductionMicros, unusedTrialCreditMicros } from '../../../domain/trial';
import { workflowIds } from '../../../domain/workflow-ids';
import { createLogger } from '../../../infra/log';
import { ensureTrialTimers, startTrialTimer } from '../../../starters/trial-credit';
import type { trialCreditWorkflow } from '../../../workflows/trial-credit';
import { stack } from '../../harness/stack';
import { testWorker } from '../../harness/worker';
import { assertLedgerMatchesBalance } from './fixtures/helpers';

const usd = usdToMicros;

describe('accounts: trial credit', () => {
  it('unused = trial credit − net spend since the start, never below zero, never more than available', () => {
    assert.equal(TRIAL_CREDIT_MICROS, usd('5'));
    assert.equal(unusedTrialCreditMicros({ trialCreditMicros: usd('5'), spentSinceStartMicros: usd('1.25') }), usd('3.75'));
    assert.equal(unusedTrialCreditMicros({ trialCreditMicros: usd('5'), spentSinceStartMicros: usd('7') }), 0n);
    assert.equal(
      trialExpiryDeductionMicros({ trialCreditMicros: usd('5'), spentSinceStartMicros: 0n, availableMicros: usd('2') }),
      usd('2'),
    );
    const micros = fc.bigInt({ min: 0n, max: 10n ** 12n });
    fc.assert(
      fc.property(micros, micros, micros, micros, (trial, spent, topUps, reserved) => {
        // Any reachable state: balance = trial + top-ups − spend ≥ reserved.
        fc.pre(trial + topUps >= spent + reserved);
        const balance = trial + topUps - spent;
        const d = trialExpiryDeductionMicros({
          trialCreditMicros: trial,
          spentSinceStartMicros: spent,
          availableMicros: balance - reserved,
        });
        assert.ok(d >= 0n && d <= trial);
        assert.ok(balance - d >= reserved, 'deduction ate into reserved money');
        // Top-ups are never deducted: what remains covers every top-up not yet spent beyond the trial.
        const topUpsLeft = spent > trial ? topUps - (spent - trial) : topUps;
        assert.ok(balance - d >= topUpsLeft);
      }),
    );
  });

  it('the workflow sleeps the configured period on the real Temporal server, then deducts only the unused trial', async function () {
    this.timeout(60_000);
    const { env, db } = stack();
    const { worker, taskQueue } = await testWorker(
      require.resolve('../../../workflows/trial-credit'),
      createAccountActivities({ db, log: createLogger('test', () => undefined) }),
    );

    // Partly used: $1.25 net spent of the $5 trial, plus a $3 top-up → $3.75 deducted, the top-up untouched.
    const partly = await createOrganisation(db, { name: 'Partly Used Co' });
    await topUp(db, { orgId: partly.orgId, amountMicros: usd('3') });
    await reserve(db, { orgId: partly.orgId, requestId: 'c1', amountMicros: usd('2') });
    await settle(db, { orgId: partly.orgId, requestId: 'c1', chargeMicros: usd('1.50'), capCreditMicros: usd('0.25') });
    // Spent beyond the trial: $7 of a $5 trial plus a $10 top-up → nothing deducted.
    const spent = await createOrganisation(db, { name: 'Spent Co', creditMicros: usd('10') });
    await settle(db, { orgId: spent.orgId, requestId: 'c2', chargeMicros: usd('7') });

    const started = Date.now();
    const results = await worker.runUntil(() =>
      Promise.all(
        [partly, spent].map((org) =>
          env.client.workflow.execute<typeof trialCreditWorkflow>('trialCreditWorkflow', {
            taskQueue,
            workflowId: workflowIds.trialCredit(org.orgId),
            args: [{ orgId: org.orgId, trialStartedAt: org.trialStartedAt.toISOString(), periodMs: 2000 }],
          }),
        ),
      ),
    );
    assert.ok(Date.now() - started >= 1500, 'the workflow did not wait for the trial period');
    assert.deepEqual(results, [{ deductedMicros: usd('3.75').toString() }, { deductedMicros: '0' }]);
    assert.equal((await getBalance(db, partly.orgId)).balanceMicros, usd('3'));
    assert.equal((await getBalance(db, spent.orgId)).balanceMicros, usd('8'));
    assert.equal((await listLedger(db, partly.orgId, 1))[0].kind, 'trial_expiry');
    for (const org of [partly, spent]) await assertLedgerMatchesBalance(db, org.orgId);

    // A retried activity changes nothing.
    assert.deepEqual(await expireTrialCredit(db, partly.orgId), { deductedMicros: usd('3.75'), alreadyExpired: true });
    assert.equal((await getBalance(db, partly.orgId)).balanceMicros, usd('3'));
  });

  it('never deducts money held for a call in flight', async () => {
    const { db } = stack();
    const org = await createOrganisation(db, { name: 'Held Co' });
    await reserve(db, { orgId: org.orgId, requestId: 'held', amountMicros: usd('4') });
    assert.deepEqual(await expireTrialCredit(db, org.orgId), { deductedMicros: usd('1'), alreadyExpired: false });
    assert.deepEqual(await getBalance(db, org.orgId), { balanceMicros: usd('4'), reservedMicros: usd('4'), availableMicros: 0n });
    await assertLedgerMatchesBalance(db, org.orgId);
  });

  it('trial timers start once per organisation, and ensureTrialTimers catches up on deferred ones', async () => {
    const { env, db } = stack();
    const deferred = await createOrganisation(db, { name: 'Deferred Co' });
    assert.ok((await ensureTrialTimers(db, env.client)) >= 1);
    assert.equal(await ensureTrialTimers(db, env.client), 0);
    const handle = env.client.workflow.getHandle(workflowIds.trialCredit(deferred.orgId));
    const first = await handle.describe();
    assert.equal(first.status.name, 'RUNNING');
    assert.equal(first.taskQueue, 'deliberation');
    await startTrialTimer(db, env.client, { orgId: deferred.orgId, trialStartedAt: deferred.trialStartedAt.toISOString() });
    assert.equal((await handle.describe()).runId, first.runId);
    // Once finished it is never restarted.
    await handle.terminate('test over');
    await startTrialTimer(db, env.client, { orgId: deferred.orgId, trialStartedAt: deferred.trialStartedAt.toISOString() });
    assert.equal((await env.client.workflow.getHandle(workflowIds.trialCredit(deferred.orgId)).describe()).runId, first.runId);
  });
});
