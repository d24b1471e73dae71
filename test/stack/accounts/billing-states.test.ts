import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { billingRefusal, setBilling } from '../../../db/repositories/billing';
import { getBalance, reserve, settle } from '../../../db/repositories/ledger';
import { QuorumError } from '../../../domain/errors';
import type { Form } from '../../../domain/form';
import { microsToDecimal } from '../../../domain/money';
import { CERTIFICATION } from '../../../domain/runs';
import { call, EXPRESS, FORMS, moneySnapshot, newKey, newOrg, startApi, USER, type Api, type Reply, type TestOrg } from '../api/helpers';
import { assertHoldRefused, startProductWorkers, systemMode } from '../deliberation/helpers';
import { cancelToEnd, exemptFromAudit } from '../../harness/audit';
import { quorumCli } from '../../harness/cli';
import { stack } from '../../harness/stack';
import { demoModes } from '../runs/helpers';

/** Every live key below holds exactly this much per call (its own ceiling), so a limit's boundary is known. */
const CEILING = 1_000_000n;
const usd = (micros: bigint): string => microsToDecimal(micros);

describe('accounts: organisation billing states (402), set by the operator CLI', function () {
  this.timeout(180_000);
  const apis = {} as Record<Form, Api>;
  let workers: { stop(): Promise<void> };
  let dataDir: string;
  let asked = 0;

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-billing-'));
    workers = await startProductWorkers({});
    for (const form of FORMS) apis[form] = await startApi(form);
  });
  after(async () => {
    for (const form of FORMS) await apis[form].close();
    await workers.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /** `quorum <args> --json`, which must succeed; its one JSON object. */
  async function quorum(...args: string[]): Promise<Record<string, unknown>> {
    const run = await quorumCli([...args, '--json'], dataDir);
    assert.equal(run.code, 0, run.stderr);
    return JSON.parse(run.stdout) as Record<string, unknown>;
  }

  /** An organisation with a live key holding `CEILING` per call, and a test key. */
  async function billedOrg(creditUsd = 20): Promise<TestOrg & { live: string; test: string }> {
    const org = await newOrg(creditUsd);
    const live = await newKey(org.orgId, { limits: { maxCostMicros: CEILING, requestsPerMinute: 1_000 } });
    return { ...org, live, test: await newKey(org.orgId, { keyKind: 'test' }) };
  }

  /** A completion of a prompt never asked before (a derived key would replay a repeat). */
  const ask = (form: Form, key: string): Promise<Reply> =>
    call(apis[form], 'POST', '/v1/chat/completions', { key, body: { model: EXPRESS[form], messages: USER(`What is ${++asked} + 1?`) } });

  async function passes(form: Form, key: string): Promise<void> {
    const r = await ask(form, key);
    assert.equal(r.status, 200, JSON.stringify(r.body));
  }

  /** 402 with `code` before anything starts: no money moved, no request row, no workflow. */
  async function refused(form: Form, org: TestOrg & { live: string }, code: string): Promise<Reply> {
    const before = await moneySnapshot(org.orgId);
    const requests = (await stack().db('requests').where({ org_id: org.orgId })).length;
    const r = await ask(form, org.live);
    assert.equal(r.status, 402, `Form ${form}: ${JSON.stringify(r.body)}`);
    assert.deepEqual([r.body.error?.type, r.body.error?.code], ['invalid_request_error', code], JSON.stringify(r.body));
    assert.equal(await moneySnapshot(org.orgId), before, 'a refused call moves no money');
    assert.equal((await stack().db('requests').where({ org_id: org.orgId })).length, requests, 'and leaves no request behind');
    return r;
  }

  /** What the organisation spent: every balance change after its credit was a charge. */
  async function spent(org: TestOrg, creditUsd: number): Promise<bigint> {
    return 5_000_000n + BigInt(creditUsd * 1_000_000) - (await getBalance(stack().db, org.orgId)).balanceMicros;
  }

  const STATES: { code: string; set: string[]; unset: string[] }[] = [
    { code: 'no_billing_configured', set: ['org', 'billing', '--state', 'not_configured'], unset: ['org', 'billing', '--state', 'active'] },
    { code: 'verification_required', set: ['org', 'activation', '--allowance', '0'], unset: ['org', 'activation', '--activate'] },
    { code: 'quota_exceeded', set: ['org', 'quota', '--monthly', '0'], unset: ['org', 'quota', '--none'] },
  ];

  for (const state of STATES) {
    it(`${state.code}: 402 on /v1/chat/completions in both Forms, nothing charged; a test key still runs; undone by the CLI`, async () => {
      const org = await billedOrg();
      await quorum(...state.set, '--org', org.orgId);
      for (const form of FORMS) {
        const r = await refused(form, org, state.code);
        assert.match(r.body.error?.message ?? '', /nothing was charged/i);
      }
      const before = await moneySnapshot(org.orgId);
      await passes('B', org.test);
      assert.equal(await moneySnapshot(org.orgId), before, 'a test key bills nothing, so no billing state refuses it');
      await quorum(...state.unset, '--org', org.orgId);
      for (const form of FORMS) await passes(form, org.live);
    });
  }

  it('the activation allowance at its boundary: a call whose hold fits passes, the next is refused; --activate lifts it', async () => {
    const org = await billedOrg();
    await quorum('org', 'activation', '--org', org.orgId, '--allowance', usd(CEILING - 1n));
    await refused('B', org, 'verification_required');
    const exact = await quorum('org', 'activation', '--org', org.orgId, '--allowance', usd(CEILING));
    assert.deepEqual([exact.activation_allowance_usd, exact.activated_at], [1, null]);
    await passes('B', org.live);
    for (const form of FORMS) await refused(form, org, 'verification_required');

    const activated = await quorum('org', 'activation', '--org', org.orgId, '--activate');
    assert.match(String(activated.activated_at), /^\d{4}-\d\d-\d\dT/);
    assert.equal(
      (await quorum('org', 'activation', '--org', org.orgId, '--activate')).activated_at,
      activated.activated_at,
      'activated once',
    );
    assert.equal(activated.spent_total_usd, Number(usd(await spent(org, 20))));
    await passes('A', org.live);
    // Setting an allowance again puts the organisation back before its activation, counting all it spent.
    const again = await quorum('org', 'activation', '--org', org.orgId, '--allowance', usd((await spent(org, 20)) + CEILING));
    assert.equal(again.activated_at, null);
    await passes('A', org.live);
    await refused('A', org, 'verification_required');
  });

  it("the monthly quota at its boundary, counting the month's charges; --none lifts it", async () => {
    const org = await billedOrg();
    await passes('A', org.live);
    const first = await spent(org, 20);
    assert.ok(first > 0n && first <= CEILING);
    await quorum('org', 'quota', '--org', org.orgId, '--monthly', usd(first + CEILING - 1n));
    await refused('A', org, 'quota_exceeded');
    const exact = await quorum('org', 'quota', '--org', org.orgId, '--monthly', usd(first + CEILING));
    assert.deepEqual([exact.monthly_quota_usd, exact.spent_this_month_usd], [Number(usd(first + CEILING)), Number(usd(first))]);
    await passes('B', org.live);
    for (const form of FORMS) await refused(form, org, 'quota_exceeded');
    const none = await quorum('org', 'quota', '--org', org.orgId, '--none');
    assert.equal(none.monthly_quota_usd, null);
    await passes('B', org.live);
  });

  it('run launches answer insufficient_balance naming the billing state (Form A launch_refused); the quota admits a run at its price', async () => {
    const org = await billedOrg(100);
    const modes = await demoModes(org.orgId);
    const launch = (form: Form): Promise<Reply> =>
      call(apis[form], 'POST', '/v1/tests', {
        key: org.ownerKey,
        body: form === 'A' ? { model: modes.weak.A, buckets: { light: 1 } } : { model: modes.weak.B, questions: { easy: 1 } },
      });
    for (const state of STATES) {
      await quorum(...state.set, '--org', org.orgId);
      for (const form of FORMS) {
        const before = await moneySnapshot(org.orgId);
        const r = await launch(form);
        assert.deepEqual(
          [r.status, r.body.error?.code],
          form === 'B' ? [402, 'insufficient_balance'] : [400, 'launch_refused'],
          JSON.stringify(r.body),
        );
        assert.match(r.body.error?.message ?? '', new RegExp(`^${state.code}: `));
        assert.equal(await moneySnapshot(org.orgId), before);
      }
      await quorum(...state.unset, '--org', org.orgId);
    }
    assert.equal((await stack().db('runs').where({ org_id: org.orgId })).length, 0, 'no refused launch wrote a run');

    // A certification's flat price is known before it is drawn (a test run's depends on the questions drawn).
    const price = BigInt(CERTIFICATION.priceMicros);
    const certify = (): Promise<Reply> => call(apis.B, 'POST', '/v1/certify', { key: org.ownerKey, body: { model: modes.weak.B } });
    await quorum('org', 'quota', '--org', org.orgId, '--monthly', usd(price - 1n));
    assert.match((await certify()).body.error?.message ?? '', /^quota_exceeded: /);
    await quorum('org', 'quota', '--org', org.orgId, '--monthly', usd(price));
    const launched = await certify();
    assert.equal(launched.status, 200, JSON.stringify(launched.body));
    assert.equal(launched.body.billed_usd, Number(usd(price)));
    // Stopped as a client would: cancelled, its unanswered questions credited back (a terminated workflow keeps the charge).
    await cancelToEnd(String(launched.body.batch_id));
  });

  it("a quota used between the API's check and the workflow's hold ends the call quota_exceeded, nothing billed", async () => {
    const org = await newOrg(20);
    const mode = await systemMode('quorum-express');
    // The API's check passed; by the time the workflow holds the ceiling, an operator set a quota it does not fit.
    await setBilling(stack().db, org.orgId, { monthlyQuotaMicros: CEILING - 1n });
    const before = await getBalance(stack().db, org.orgId);
    await assertHoldRefused(
      { orgId: org.orgId, apiKeyId: org.keyId, mode, tier: 'plus', ceilingMicros: Number(CEILING) },
      before,
      'quota_exceeded',
    );
  });

  it('concurrent calls never spend past the quota: money held by calls in flight counts, and a settle raced is seen', async () => {
    const org = await newOrg(100);
    const { db } = stack();
    const each = 1_000_000n;
    await setBilling(db, org.orgId, { monthlyQuotaMicros: 7n * each });
    exemptFromAudit(
      org.orgId,
      ['charge_without_basis'],
      'the ledger’s reserve and settle under a quota: charges under made-up request ids',
    );
    let n = 0;
    /** Reserves and settles calls until one is refused; how many went through. */
    const caller = async (): Promise<number> => {
      for (let done = 0; ; done++) {
        const requestId = `req_q_${org.orgId}_${n++}`;
        try {
          await reserve(db, { orgId: org.orgId, requestId, amountMicros: each });
        } catch (err) {
          assert.ok(err instanceof QuorumError && err.code === 'quota_exceeded', String(err));
          return done;
        }
        await settle(db, { orgId: org.orgId, requestId, chargeMicros: each });
      }
    };
    const done = await Promise.all(Array.from({ length: 8 }, caller));
    assert.equal(
      done.reduce((a, b) => a + b, 0),
      7,
      `calls admitted per caller: ${done.join(', ')}`,
    );
    const b = await getBalance(db, org.orgId);
    assert.deepEqual([b.balanceMicros, b.reservedMicros], [105_000_000n - 7n * each, 0n]);
  });

  it("spend is the ledger's charges less what was credited back; the month is the calendar month in UTC", async () => {
    const org = await newOrg(0);
    const { db } = stack();
    const monthStart = (await db.raw<{ rows: { at: Date }[] }>(`select date_trunc('month', now(), 'UTC') as at`)).rows[0].at;
    const lastMonth = new Date(monthStart.getTime() - 1_000);
    const entry = (kind: string, amountMicros: bigint, at?: Date): Record<string, unknown> => ({
      org_id: org.orgId,
      kind,
      amount_micros: amountMicros.toString(),
      ...(at ? { created_at: at } : {}),
    });
    // Written straight to the ledger (a spend history, not money movements): only the billing state reads them.
    exemptFromAudit(org.orgId, ['balance_equals_ledger', 'charge_without_basis'], 'a spend history written straight to the ledger');
    await db('ledger_entries').insert([
      entry('charge', -40_000_000n, lastMonth),
      entry('charge', -5_000_000n),
      entry('cap_credit', 1_000_000n),
      entry('test_run_charge', -3_000_000n),
      entry('run_refund', 2_000_000n),
      entry('top_up', 50_000_000n),
      entry('trial_expiry', -4_000_000n),
    ]);
    const shown = await quorum('org', 'quota', '--org', org.orgId, '--monthly', '10');
    assert.deepEqual([shown.spent_this_month_usd, shown.spent_total_usd], [5, 45]);
    assert.equal(await billingRefusal(db, org.orgId, 5_000_000n), undefined);
    assert.equal(await billingRefusal(db, org.orgId, 5_000_001n), 'quota_exceeded');
    // The allowance counts everything ever spent, before the quota is looked at.
    await quorum('org', 'activation', '--org', org.orgId, '--allowance', '46');
    assert.equal(await billingRefusal(db, org.orgId, 1_000_000n), undefined);
    assert.equal(await billingRefusal(db, org.orgId, 1_000_001n), 'verification_required');
    assert.equal(await billingRefusal(db, org.orgId, 6_000_000n), 'verification_required', 'named first when both refuse');
    await quorum('org', 'billing', '--org', org.orgId, '--state', 'not_configured');
    assert.equal(await billingRefusal(db, org.orgId, 0n), 'no_billing_configured');
  });

  it('org show lists the settings; bad arguments exit 2 with a clear message; an unknown organisation exits 1', async () => {
    const org = await newOrg(0);
    await quorum('org', 'quota', '--org', org.orgId, '--monthly', '12.5');
    const human = await quorumCli(['org', 'show', '--org', org.orgId], dataDir);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /billing set up/);
    assert.match(human.stdout, /no activation allowance/);
    assert.match(human.stdout, /monthly quota \$12\.50; spent \$0\.00 this month \(UTC\)/);
    assert.match(human.stdout, /balance \$5\.00/);
    assert.deepEqual(await quorum('org', 'show', '--org', org.orgId), {
      org_id: org.orgId,
      name: (await stack().db('organisations').where({ id: org.orgId }).first('name')).name,
      status: 'active',
      billing: 'active',
      activation_allowance_usd: null,
      activated_at: null,
      monthly_quota_usd: 12.5,
      spent_this_month_usd: 0,
      spent_total_usd: 0,
      balance_usd: 5,
      available_usd: 5,
    });

    const cases: [string[], RegExp][] = [
      [['org', 'quota', '--org', org.orgId], /give either --monthly USD or --none/],
      [['org', 'quota', '--org', org.orgId, '--monthly', '3', '--none'], /give either --monthly USD or --none/],
      [['org', 'quota', '--org', org.orgId, '--monthly=-3'], /--monthly must not be negative/],
      [['org', 'activation', '--org', org.orgId], /give either --allowance USD or --activate/],
      [['org', 'activation', '--org', org.orgId, '--allowance', 'lots'], /--allowance must be a USD amount/],
      [['org', 'billing', '--org', org.orgId, '--state', 'off'], /--state must be active or not_configured/],
      [['org', 'billing', '--state', 'active'], /--org is required/],
    ];
    const runs = await Promise.all(cases.map(([args]) => quorumCli([...args, '--json'], dataDir)));
    runs.forEach((run, i) => {
      assert.equal(run.code, 2, `${cases[i][0].join(' ')}: exit ${run.code} ${run.stderr}`);
      assert.match(run.stderr, cases[i][1]);
    });
    for (const args of [
      ['org', 'show'],
      ['org', 'activation', '--activate'],
    ]) {
      const missing = await quorumCli([...args, '--org', 'org_missing'], dataDir);
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, /not_found: no organisation org_missing/);
    }
  });
});
