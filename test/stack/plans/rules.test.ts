import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { formB } from '../../../api/forms/b';
import { createCompletion } from '../../../operations/completion';
import { estimate } from '../../../operations/estimate';
import { listModels } from '../../../operations/models';
import { authenticateApp } from '../../../db/repositories/app-principals';
import { acquireLease, releaseLease } from '../../../db/repositories/limits';
import { setOrganisationStatus } from '../../../db/repositories/organisations';
import { holdPlanCharge, planOf, planUsage, planUsageRow, releasePlanCharge, settlePlanCharge } from '../../../db/repositories/plans';
import { QuorumError, type ErrorCode } from '../../../domain/errors';
import type { Form } from '../../../domain/form';
import type { Tier } from '../../../domain/modes';
import { EXPRESS, keyPrincipal, moneySnapshot, PANEL, USER } from '../api/helpers';
import { assertHoldRefused, startProductWorkers, systemMode } from '../deliberation/helpers';
import { getBalance } from '../../../db/repositories/ledger';
import { abandonRequest } from '../../../db/repositories/requests';
import { exemptFromAudit } from '../../harness/audit';
import { stack } from '../../harness/stack';
import { appAuth, appCaller, newPerson, operationDeps, testPlan } from './helpers';

/** Rejects with the QuorumError `code` (and `param` when given); returns it. */
async function refusedWith(work: Promise<unknown>, code: ErrorCode, param?: string): Promise<QuorumError> {
  let caught: unknown;
  await assert.rejects(work, (e: unknown) => {
    caught = e;
    return e instanceof QuorumError && e.code === code && (param === undefined || e.param === param);
  });
  return caught as QuorumError;
}

const prompt = (): ReturnType<typeof USER> => USER(`What is ${randomUUID().slice(0, 6)} spelled backwards?`);

const completion = (form: Form, auth: Awaited<ReturnType<typeof appCaller>>['auth'], model: string, tier?: Tier) =>
  createCompletion(operationDeps(form), auth, { body: { model, messages: prompt(), tier } });

const estimateOf = (form: Form, auth: Awaited<ReturnType<typeof appCaller>>['auth'], model: string, tier?: Tier) =>
  estimate(operationDeps(form), auth, {
    requestId: `est_${randomUUID()}`,
    body: { model, messages: prompt(), tier },
    startedAt: performance.now(),
  });

async function requestCount(orgId: string): Promise<number> {
  return (await stack().db('requests').where({ org_id: orgId })).length;
}

describe('plans: the rules a plan sets on a connected app (tier_not_permitted, plan_limit_reached, too_many_concurrent_requests)', function () {
  this.timeout(120_000);
  let workers: { stop(): Promise<void> };

  before(async () => {
    workers = await startProductWorkers({});
  });
  after(async () => {
    await workers.stop();
  });

  describe('authenticateApp', () => {
    it('a member gets a live, key-shaped context on the free plan by default; a former member is invalid_oauth_token; a suspended organisation org_suspended', async () => {
      const { org, person, auth } = await appCaller();
      assert.equal(auth.keyId.startsWith('app:grant_'), true);
      assert.deepEqual([auth.orgId, auth.keyKind, auth.allowedModes, auth.isOwner], [org.orgId, 'live', null, false]);
      assert.equal(auth.app?.personId, person.id);
      assert.deepEqual(auth.app?.plan, await planOf(stack().db, person.id));
      assert.deepEqual([auth.app?.plan.id, auth.app?.plan.tiers, auth.app?.plan.maxInFlight], ['free', ['experience'], 1]);

      const stranger = await newPerson();
      await refusedWith(appAuth(org.orgId, stranger.id), 'invalid_oauth_token');
      await refusedWith(appAuth(`org_${randomUUID()}`, person.id), 'invalid_oauth_token');
      await setOrganisationStatus(stack().db, org.orgId, 'suspended');
      await refusedWith(
        authenticateApp(stack().db, { personId: person.id, orgId: org.orgId, clientId: 'c', grantId: 'g', scopes: [] }),
        'org_suspended',
      );
    });
  });

  describe('tier_not_permitted (403)', () => {
    it('a tier above the plan is refused after the mode resolves, in completions and estimates of both Forms; nothing runs', async () => {
      const { org, auth } = await appCaller(); // free: experience only
      const before = await moneySnapshot(org.orgId);
      // Form B: the panel at plus (the default tier) and pro.
      for (const tier of [undefined, 'pro'] as const) {
        const err = await refusedWith(completion('B', auth, PANEL.B, tier), 'tier_not_permitted', 'tier');
        assert.equal(err.spec.status, 403);
        await refusedWith(estimateOf('B', auth, PANEL.B, tier), 'tier_not_permitted', 'tier');
      }
      // Form A has no tier: its panel mode seats the plus row.
      await refusedWith(completion('A', auth, PANEL.A), 'tier_not_permitted', 'tier');
      await refusedWith(estimateOf('A', auth, PANEL.A), 'tier_not_permitted', 'tier');
      // The mode is resolved first (spec order): an unknown one is still 404.
      await refusedWith(completion('B', auth, 'NOPE:NOPE', 'pro'), 'model_not_found');
      assert.equal(await requestCount(org.orgId), 0, 'a refused call leaves no request behind');
      assert.equal(await moneySnapshot(org.orgId), before);

      // What the plan does include is estimated for free: the express lane seats the experience row whatever the tier.
      assert.equal((await estimateOf('B', auth, PANEL.B, 'experience')).tier, 'experience');
      assert.equal((await estimateOf('A', auth, EXPRESS.A)).mode.id, EXPRESS.A);
      const quoted = await estimateOf('B', auth, EXPRESS.B);
      assert.deepEqual([quoted.quote?.modeFeeMicros, quoted.quote?.platformFeeMicros, quoted.quote?.ceilingMicros], [0, 0, null]);
    });

    it("a mode outside the plan's modes is refused (param model); /v1/models lists only the plan's modes, with no ceiling", async () => {
      const plan = await testPlan({ modes: [EXPRESS.B, EXPRESS.A] });
      const { org, auth } = await appCaller(plan);
      for (const form of ['A', 'B'] as const) {
        await refusedWith(completion(form, auth, PANEL[form]), 'tier_not_permitted', 'model');
        await refusedWith(estimateOf(form, auth, PANEL[form]), 'tier_not_permitted', 'model');
      }
      assert.equal(await requestCount(org.orgId), 0);

      const deps = operationDeps('B');
      const listed = await listModels(deps, auth);
      assert.deepEqual(
        listed.map((v) => v.mode.ticker),
        [EXPRESS.B],
      );
      assert.equal(listed[0].ceilingMicros, null);
      const json = formB.model(listed[0]) as { svc: { pricing: { per_call_cost_ceiling_usd: unknown } } };
      assert.equal(json.svc.pricing.per_call_cost_ceiling_usd, null);
      // The organisation's own key still lists every mode it is entitled to, each with its ceiling.
      const keyAuth = await keyPrincipal(org.ownerKey);
      const all = await listModels(deps, keyAuth);
      assert.ok(all.length > 1 && all.every((v) => typeof v.ceilingMicros === 'number'));
    });
  });

  describe('plan_limit_reached (402)', () => {
    it("a call whose hold would pass this month's allowance is refused before anything runs; the organisation's money is untouched", async () => {
      const plan = await testPlan({ monthlyAllowanceMicros: 1 });
      const { org, person, auth } = await appCaller(plan);
      const before = await moneySnapshot(org.orgId);
      for (const form of ['A', 'B'] as const) {
        const err = await refusedWith(completion(form, auth, EXPRESS[form]), 'plan_limit_reached');
        assert.equal(err.spec.status, 402);
      }
      assert.equal(await requestCount(org.orgId), 0, 'no request row, no workflow');
      assert.equal(await moneySnapshot(org.orgId), before);
      assert.equal((await planUsage(stack().db, person.id)).heldMicros, 0n);
    });

    it('concurrent holds never pass the allowance together; hold, settle and release are idempotent by request id', async () => {
      const { db } = stack();
      const plan = await testPlan({ monthlyAllowanceMicros: 1_000 });
      const { org, person } = await appCaller(plan);
      // The plans' ledger without calls: a settled charge with no receipt (the suite's audit is told).
      exemptFromAudit(org.orgId, ['plan_usage_mismatch'], 'plan holds and a charge under made-up request ids');
      const ids = Array.from({ length: 24 }, (_, i) => `req_hold_${i}_${randomUUID()}`);
      const results = await Promise.allSettled(
        ids.map((requestId) => holdPlanCharge(db, { requestId, orgId: org.orgId, personId: person.id, amountMicros: 100n })),
      );
      const held = ids.filter((_, i) => results[i].status === 'fulfilled');
      assert.equal(held.length, 10, 'exactly as many 100-micro holds as fit 1,000');
      for (const r of results)
        if (r.status === 'rejected') assert.ok(r.reason instanceof QuorumError && r.reason.code === 'plan_limit_reached', String(r.reason));
      let usage = await planUsage(db, person.id);
      assert.deepEqual([usage.heldMicros, usage.chargedMicros, usage.remainingMicros], [1_000n, 0n, 0n]);

      // A repeated hold changes nothing, even when the allowance is used.
      await holdPlanCharge(db, { requestId: held[0], orgId: org.orgId, personId: person.id, amountMicros: 100n });
      // A charge replaces its hold (a plan call has no ceiling: it may pass the hold); a release gives one back.
      assert.deepEqual(await settlePlanCharge(db, { requestId: held[0], chargeMicros: 130n }), { alreadySettled: false });
      assert.deepEqual(await settlePlanCharge(db, { requestId: held[0], chargeMicros: 999n }), { alreadySettled: true });
      await releasePlanCharge(db, { requestId: held[1] });
      await releasePlanCharge(db, { requestId: held[1] });
      await releasePlanCharge(db, { requestId: held[0] });
      assert.equal((await planUsageRow(db, held[0]))?.state, 'settled', 'a release after the settle changes nothing');
      usage = await planUsage(db, person.id);
      assert.deepEqual([usage.chargedMicros, usage.heldMicros, usage.remainingMicros, usage.calls], [130n, 800n, 70n, 1]);
      // Every figure is a sum of the plan's ledger rows.
      const rows = (await db('plan_usage').where({ person_id: person.id })) as {
        state: string;
        held_micros: bigint;
        charged_micros: bigint;
      }[];
      assert.equal(rows.length, 10);
      assert.equal(
        rows.reduce((n, r) => n + (r.state === 'settled' ? r.charged_micros : r.state === 'held' ? r.held_micros : 0n), 0n),
        930n,
      );
      // The holds' requests are made up: given back, so none outlives them.
      for (const requestId of held) await releasePlanCharge(db, { requestId });
    });

    it('the hold is the authority: a call the API admitted whose hold no longer fits ends plan_limit_reached, nothing charged', async () => {
      const { db } = stack();
      const plan = await testPlan({ monthlyAllowanceMicros: 1_000 });
      const { org, person } = await appCaller(plan);
      const mode = await systemMode(EXPRESS.A);
      // Between the API's check and the workflow's hold, another call of the person took the allowance.
      const requestId = await assertHoldRefused(
        {
          orgId: org.orgId,
          apiKeyId: 'app:grant_race',
          mode,
          tier: 'experience',
          ceilingMicros: null,
          payer: { kind: 'plan', personId: person.id, holdMicros: 1_001 },
        },
        await getBalance(db, org.orgId),
        'plan_limit_reached',
      );
      assert.equal(await planUsageRow(db, requestId), undefined, 'no hold was taken');
    });

    it("a call that ends without an answer gives the plan's hold back with its failure", async () => {
      const { db } = stack();
      const { org, person } = await appCaller();
      const requestId = `req_plan_fail_${randomUUID()}`;
      await holdPlanCharge(db, { requestId, orgId: org.orgId, personId: person.id, amountMicros: 500n });
      assert.equal((await planUsage(db, person.id)).heldMicros, 500n);
      await abandonRequest(db, { orgId: org.orgId, requestId, code: 'mode_unavailable' });
      assert.equal((await planUsageRow(db, requestId))?.state, 'released');
      assert.deepEqual(await planUsage(db, person.id).then((u) => [u.heldMicros, u.chargedMicros]), [0n, 0n]);
    });
  });

  describe('too_many_concurrent_requests (429)', () => {
    it("a person's deliberations in flight are limited by the plan, with Retry-After; the organisation's own keys are not", async () => {
      const plan = await testPlan({ maxInFlight: 1 });
      const { org, person, auth } = await appCaller(plan);
      const { db } = stack();
      // A deliberation of this person in flight elsewhere (another API process) holds the one slot.
      const lease = await acquireLease(db, `person:${person.id}`, 1);
      assert.ok(lease);
      try {
        for (const form of ['A', 'B'] as const) {
          const err = await refusedWith(completion(form, auth, EXPRESS[form]), 'too_many_concurrent_requests');
          assert.deepEqual([err.spec.status, err.retryAfter], [429, 5]);
        }
        assert.equal(await requestCount(org.orgId), 0);
        // Estimates are not deliberations; the organisation's key calls on.
        assert.equal((await estimateOf('B', auth, EXPRESS.B)).mode.ticker, EXPRESS.B);
        const keyAuth = await keyPrincipal(org.ownerKey);
        const viaKey = await createCompletion(operationDeps('B'), keyAuth, { body: { model: EXPRESS.B, messages: prompt() } });
        assert.equal(viaKey.outcome.payer, 'service');
      } finally {
        await releaseLease(db, lease);
      }
      const { outcome } = await completion('B', auth, EXPRESS.B);
      assert.equal(outcome.payer, 'plan');
      assert.equal(
        await db('concurrency_leases')
          .where({ org_id: `person:${person.id}` })
          .count<{ n: bigint }[]>('* as n')
          .then((r) => Number(r[0].n)),
        0,
        'the slot is given back when the call ends',
      );
    });
  });
});
