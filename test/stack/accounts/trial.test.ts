import fc from 'fast-check';
import assert from 'node:assert/strict';
import { createAccountActivities } from '../../../activities/accounts';
import { randomUUID } from 'node:crypto';
import { getBalance, listLedger, release, reserve, settle, topUp } from '../../../db/repositories/ledger';
import { failLaunch, launchRun } from '../../../db/repositories/runs';
import { createOrganisation } from '../../../db/repositories/organisations';
import { expireTrialCredit } from '../../../db/repositories/trial-credit';
import { usdToMicros } from '../../../domain/money';
import { TRIAL_CREDIT_MICROS, trialCatchUpMicros, trialExpiryDeductionMicros, unusedTrialCreditMicros } from '../../../domain/trial';
import { workflowIds } from '../../../domain/workflow-ids';
import { createLogger } from '../../../infra/log';
import { ensureTrialTimers, startTrialTimer } from '../../../starters/trial-credit';
import type { trialCreditWorkflow } from '../../../workflows/trial-credit';
import { exemptFromAudit } from '../../harness/audit';
import { stack } from '../../harness/stack';
import { testWorker } from '../../harness/worker';
import { call, EXPRESS, startApi, USER } from '../api/helpers';
import { startProductWorkers } from '../deliberation/helpers';
import { assertLedgerMatchesBalance } from './fixtures/helpers';

const usd = usdToMicros;

/** The trial's ledger under calls with made-up request ids: their charges have no receipt (the suite's audit is told). */
const madeUpCalls = (orgId: string): void => exemptFromAudit(orgId, ['charge_without_basis'], 'ledger calls under made-up request ids');

describe('accounts: trial credit', () => {
  it('unused = trial credit − net spend; held money is deducted as it settles, never more than unused, never a top-up', () => {
    assert.equal(TRIAL_CREDIT_MICROS, usd('5'));
    assert.equal(unusedTrialCreditMicros({ trialCreditMicros: usd('5'), spentSinceStartMicros: usd('1.25') }), usd('3.75'));
    assert.equal(unusedTrialCreditMicros({ trialCreditMicros: usd('5'), spentSinceStartMicros: usd('7') }), 0n);
    // $2 held at expiry: $3 is certain now; the $2 waits for the call's end.
    assert.equal(
      trialExpiryDeductionMicros({
        trialCreditMicros: usd('5'),
        spentSinceStartMicros: 0n,
        heldMicros: usd('2'),
        availableMicros: usd('3'),
      }),
      usd('3'),
    );
    const micros = fc.bigInt({ min: 0n, max: 10n ** 12n });
    fc.assert(
      fc.property(
        micros,
        micros,
        micros,
        fc.array(fc.tuple(micros, fc.double({ min: 0, max: 1, noNaN: true })), { maxLength: 5 }),
        (trial, spent, topUps, holds) => {
          // Any reachable state: balance = trial + top-ups − spend ≥ held.
          const held = holds.reduce((sum, [h]) => sum + h, 0n);
          fc.pre(trial + topUps >= spent + held);
          let balance = trial + topUps - spent;
          let reserved = held;
          let deducted = trialExpiryDeductionMicros({
            trialCreditMicros: trial,
            spentSinceStartMicros: spent,
            heldMicros: held,
            availableMicros: balance - reserved,
          });
          assert.ok(deducted >= 0n && deducted <= balance - reserved, 'the expiry took held money');
          balance -= deducted;
          let due = trial - spent - deducted;
          // Each hold settles, spending a share of what it held, and frees the rest; the catch-up takes only freed money.
          let open = held;
          let charged = 0n;
          for (const [h, share] of holds) {
            const x = (h * BigInt(Math.round(share * 1000))) / 1000n;
            balance -= x;
            reserved -= h;
            open -= h;
            charged += x;
            due -= x;
            const more = trialCatchUpMicros({ dueMicros: due, openHeldMicros: open, availableMicros: balance - reserved });
            assert.ok(more <= h - x, 'a catch-up took more than its call freed');
            balance -= more;
            due -= more;
            deducted += more;
            assert.ok(balance >= reserved);
          }
          // In the end exactly the unused part, counting the calls in flight as spent from the trial first.
          assert.equal(deducted, unusedTrialCreditMicros({ trialCreditMicros: trial, spentSinceStartMicros: spent + charged }));
          // Top-ups are never deducted: what remains is every top-up not spent beyond the trial.
          const beyond = spent + charged - trial;
          assert.equal(balance, topUps - (beyond > 0n ? beyond : 0n));
        },
      ),
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
    for (const org of [partly, spent]) madeUpCalls(org.orgId);
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

  /** Σ of the organisation's trial_expiry entries, as a positive amount. */
  async function deducted(orgId: string): Promise<bigint> {
    const { rows } = await stack().db.raw<{ rows: { d: bigint }[] }>(
      "select coalesce(-sum(amount_micros), 0)::bigint as d from ledger_entries where org_id = ? and kind = 'trial_expiry'",
      [orgId],
    );
    return rows[0].d;
  }

  it('a hold in flight at expiry: the part it leaves unused is deducted when it settles, in the same transaction', async () => {
    const { db } = stack();
    // $5 trial, nothing else: a $2 hold in flight at expiry; the call then charges $0.50.
    const org = await createOrganisation(db, { name: 'Held Co' });
    madeUpCalls(org.orgId);
    await reserve(db, { orgId: org.orgId, requestId: 'held', amountMicros: usd('2') });
    assert.deepEqual(await expireTrialCredit(db, org.orgId), { deductedMicros: usd('3'), alreadyExpired: false });
    assert.deepEqual(await getBalance(db, org.orgId), { balanceMicros: usd('2'), reservedMicros: usd('2'), availableMicros: 0n });
    await settle(db, { orgId: org.orgId, requestId: 'held', chargeMicros: usd('0.50') });
    // Unused by hand: $5 − $0.50 the call spent.
    assert.equal(await deducted(org.orgId), usd('4.50'));
    assert.deepEqual(await getBalance(db, org.orgId), { balanceMicros: 0n, reservedMicros: 0n, availableMicros: 0n });
    await assertLedgerMatchesBalance(db, org.orgId);
    // A retried settle, a retried expiry: nothing more.
    await settle(db, { orgId: org.orgId, requestId: 'held', chargeMicros: usd('0.50') });
    assert.deepEqual(await expireTrialCredit(db, org.orgId), { deductedMicros: usd('3'), alreadyExpired: true });
    assert.equal(await deducted(org.orgId), usd('4.50'));

    // Released (the call failed): all of it is deducted.
    const released = await createOrganisation(db, { name: 'Released Co' });
    await reserve(db, { orgId: released.orgId, requestId: 'gone', amountMicros: usd('4') });
    assert.deepEqual(await expireTrialCredit(db, released.orgId), { deductedMicros: usd('1'), alreadyExpired: false });
    await release(db, { orgId: released.orgId, requestId: 'gone' });
    assert.equal(await deducted(released.orgId), usd('5'));
    assert.equal((await getBalance(db, released.orgId)).balanceMicros, 0n);
    await assertLedgerMatchesBalance(db, released.orgId);

    // Form B: charged in full, the part over the ceiling credited back: the credit does not bring trial credit back.
    const capped = await createOrganisation(db, { name: 'Capped Co' });
    madeUpCalls(capped.orgId);
    await reserve(db, { orgId: capped.orgId, requestId: 'cap', amountMicros: usd('2') });
    await expireTrialCredit(db, capped.orgId);
    await settle(db, { orgId: capped.orgId, requestId: 'cap', chargeMicros: usd('2.60'), capCreditMicros: usd('0.60') });
    assert.equal(await deducted(capped.orgId), usd('3'));
    assert.equal((await getBalance(db, capped.orgId)).balanceMicros, 0n);
    await assertLedgerMatchesBalance(db, capped.orgId);
  });

  it('never deducts a top-up, nor money freed by calls that began after the expiry', async () => {
    const { db } = stack();
    // $5 trial + $10 top-up; $2 held at expiry, of which the call spends $1.50 (from the trial first).
    const org = await createOrganisation(db, { name: 'Topped Co', creditMicros: usd('10') });
    madeUpCalls(org.orgId);
    await reserve(db, { orgId: org.orgId, requestId: 'before', amountMicros: usd('2') });
    assert.deepEqual(await expireTrialCredit(db, org.orgId), { deductedMicros: usd('3'), alreadyExpired: false });
    // A call that began after the expiry holds and gives back the top-up's money: nothing is deducted from it.
    await reserve(db, { orgId: org.orgId, requestId: 'after', amountMicros: usd('4') });
    await release(db, { orgId: org.orgId, requestId: 'after' });
    assert.equal(await deducted(org.orgId), usd('3'));
    await settle(db, { orgId: org.orgId, requestId: 'before', chargeMicros: usd('1.50') });
    // Unused by hand: $5 − $1.50; the $10 top-up is whole.
    assert.equal(await deducted(org.orgId), usd('3.50'));
    assert.equal((await getBalance(db, org.orgId)).balanceMicros, usd('10'));
    // Later calls never deduct again.
    await reserve(db, { orgId: org.orgId, requestId: 'later', amountMicros: usd('1') });
    await settle(db, { orgId: org.orgId, requestId: 'later', chargeMicros: usd('0.25') });
    assert.equal(await deducted(org.orgId), usd('3.50'));
    assert.equal((await getBalance(db, org.orgId)).balanceMicros, usd('9.75'));
    await assertLedgerMatchesBalance(db, org.orgId);
  });

  it('a run charged before the expiry and refunded after it does not bring trial credit back', async () => {
    const { db } = stack();
    const org = await createOrganisation(db, { name: 'Run Co' });
    const run = async (charge: bigint): Promise<string> => {
      const id = randomUUID();
      const launched = await launchRun(
        db,
        {
          id,
          orgId: org.orgId,
          kind: 'test',
          workflowId: `trial-test-run-${id}`,
          idempotencyKey: id,
          fingerprint: id,
          keyKind: 'live',
          apiKeyId: org.keyId,
          modeId: 'quorum-panel',
          modeVersion: 1,
          model: 'QRM:PANL',
          spec: {
            counts: { light: 1, medium: 1, hard: 1 },
            judges: ['judge_a'],
            repeats: 1,
            protocol: 'pairwise',
            punchUp: false,
            tiers: ['plus'],
            questionSetId: null,
            seed: 1,
          },
          totalQuestions: 3,
          billedMicros: Number(charge),
          estimatedMinutes: 3,
        },
        100,
      );
      assert.ok('created' in launched && launched.created);
      return id;
    };
    // $3 of the $5 trial paid for a run up front; at expiry $2 is unused.
    const early = await run(usd('3'));
    assert.deepEqual(await expireTrialCredit(db, org.orgId), { deductedMicros: usd('2'), alreadyExpired: false });
    // The run never starts: its $3 comes back, and with it $3 of trial credit that is then unused too.
    await failLaunch(db, early, 'launch_failed', 'test');
    assert.equal(await deducted(org.orgId), usd('5'));
    assert.equal((await getBalance(db, org.orgId)).balanceMicros, 0n);
    // A run launched after the expiry, paid by a top-up and refunded: nothing is deducted from its refund.
    await topUp(db, { orgId: org.orgId, amountMicros: usd('4') });
    const late = await run(usd('3'));
    await failLaunch(db, late, 'launch_failed', 'test');
    assert.equal(await deducted(org.orgId), usd('5'));
    assert.equal((await getBalance(db, org.orgId)).balanceMicros, usd('4'));
    await assertLedgerMatchesBalance(db, org.orgId);
  });

  // Without a low-balance threshold the call's charge raises no alert, so only its trial commitment keeps its settle from
  // the one-statement path (`ledger.settleAtOnce`), which would skip the deduction.
  for (const threshold of ['the default', 'none'] as const)
    it(`through the API: a Form B call in flight when the trial timer fires leaves nothing of the trial credit (low-balance threshold: ${threshold})`, async function () {
      this.timeout(120_000);
      const { env, db } = stack();
      // Simulated engines answering slowly enough that the timer fires while the call holds its $2.
      const workers = await startProductWorkers({ QUORUM_SIM_LATENCY: 'fixed:1500' });
      const api = await startApi('B');
      const { worker, taskQueue } = await testWorker(
        require.resolve('../../../workflows/trial-credit'),
        createAccountActivities({ db, log: createLogger('test', () => undefined) }),
      );
      try {
        const org = await createOrganisation(db, { name: 'In Flight Co' });
        if (threshold === 'none') await db('balances').where({ org_id: org.orgId }).update({ low_balance_micros: 0 });
        const answered = call(api, 'POST', '/v1/chat/completions', {
          key: org.apiKey,
          body: { model: EXPRESS.B, messages: USER('In one sentence: why is the sky blue?') },
        });
        const until = Date.now() + 30_000;
        while (!(await db('reservations').where({ org_id: org.orgId, state: 'held' }).first())) {
          assert.ok(Date.now() < until, 'the call never held its money');
          await new Promise((r) => setTimeout(r, 50));
        }
        const held = (await getBalance(db, org.orgId)).reservedMicros;
        assert.equal(held, usd('2'), 'Form B holds its $2 ceiling');
        const expired = await worker.runUntil(
          env.client.workflow.execute<typeof trialCreditWorkflow>('trialCreditWorkflow', {
            taskQueue,
            workflowId: workflowIds.trialCredit(org.orgId),
            args: [{ orgId: org.orgId, trialStartedAt: org.trialStartedAt.toISOString(), periodMs: 1 }],
          }),
        );
        assert.deepEqual(expired, { deductedMicros: usd('3').toString() });
        const reply = await answered;
        assert.equal(reply.status, 200, JSON.stringify(reply.body));
        const billed = usd(String((reply.body.svc as { billed_usd: number }).billed_usd));
        assert.ok(billed > 0n && billed <= usd('2'));
        // Unused by hand: the $5 trial less what the call was billed; nothing is left.
        assert.equal(await deducted(org.orgId), usd('5') - billed);
        assert.deepEqual(await getBalance(db, org.orgId), { balanceMicros: 0n, reservedMicros: 0n, availableMicros: 0n });
        await assertLedgerMatchesBalance(db, org.orgId);
      } finally {
        await api.close();
        await workers.stop();
      }
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
