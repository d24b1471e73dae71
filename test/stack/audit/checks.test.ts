import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import type { Knex } from 'knex';
import { postEntries, release, reserve, reserveIn, settleIn } from '../../../db/repositories/ledger';
import { INVARIANTS, violationLine, type Invariant, type Violation } from '../../../domain/audit';
import { audit } from '../../../operations/audit';
import { expireTrialCredit } from '../../../db/repositories/trial-credit';
import { QuorumOrg } from '../../../workflows/search-attributes';
import { TASK_QUEUES } from '../../../workflows/task-queues';
import { quorumCli } from '../../harness/cli';
import { until } from '../../harness/faults';
import { stack } from '../../harness/stack';
import { customMode, deliberate, newOrg, startProductWorkers, systemMode } from '../deliberation/helpers';

/**
 * Issue 26 item 18: the auditor names each kind of broken state. Every case breaks a copy of real state (a settled
 * Form B call of this file's own organisation, or rows beside it) inside a transaction, audits that transaction (and
 * Temporal) and rolls it back, so nothing broken outlives the case; the organisation audits clean before and after.
 */

type Corruption = (trx: Knex.Transaction) => PromiseLike<unknown>;

describe('audit: each invariant names the state that breaks it', function () {
  this.timeout(180_000);
  let workers: { stop(): Promise<void> };
  let org: { orgId: string; keyId: string };
  /** A settled Form B call of the organisation: its request, receipt, reservation and ledger entries. */
  let call: { requestId: string; idempotencyKey: string; billedMicros: number };

  before(async () => {
    workers = await startProductWorkers();
    org = await newOrg(50);
    const idempotencyKey = randomUUID();
    const { outcome } = await deliberate({ org, mode: await systemMode('quorum-panel'), form: 'B', idempotencyKey });
    call = { requestId: outcome.requestId, idempotencyKey, billedMicros: outcome.money.billedMicros };
    assert.ok(call.billedMicros > 0, 'a live call billed something');
  });
  after(async () => {
    await workers.stop();
  });

  const scope = (): { orgIds: string[] } => ({ orgIds: [org.orgId] });

  /** What the auditor says of the organisation with `corrupt` applied, in a transaction then rolled back. */
  async function violationsAfter(corrupt: Corruption): Promise<Violation[]> {
    const trx = await stack().db.transaction();
    try {
      await corrupt(trx);
      return await audit(trx, stack().env.client, scope());
    } finally {
      await trx.rollback();
    }
  }

  async function assertNames(corrupt: Corruption, invariant: Invariant, ids: Record<string, string>): Promise<Violation[]> {
    const found = await violationsAfter(corrupt);
    const named = found.filter((v) => v.invariant === invariant && Object.entries(ids).every(([k, id]) => v.ids[k] === id));
    assert.ok(
      named.length > 0,
      `expected ${invariant} naming ${JSON.stringify(ids)}; the auditor said:\n${found.map(violationLine).join('\n')}`,
    );
    return found;
  }

  /** A run row as the admission writes it (with its charge when billed), at the given state. */
  async function insertRun(
    trx: Knex.Transaction,
    run: {
      kind?: 'test' | 'certification';
      state?: string;
      billed?: number;
      keyMode?: 'live' | 'test';
      modeId?: string;
      modeVersion?: number;
      summary?: unknown;
      workflowId?: string;
      spec?: unknown;
      refunded?: number;
    },
  ): Promise<string> {
    const id = randomUUID();
    const key = randomUUID();
    await trx('runs').insert({
      id,
      org_id: org.orgId,
      kind: run.kind ?? 'test',
      workflow_id: run.workflowId ?? `bench/${org.orgId}/${key}`,
      idempotency_key: key,
      fingerprint: 'audit-test',
      key_mode: run.keyMode ?? 'live',
      mode_id: run.modeId ?? 'quorum-panel',
      mode_version: run.modeVersion ?? 1,
      model: run.modeId ?? 'quorum-panel',
      spec: JSON.stringify(run.spec ?? {}),
      total_questions: 12,
      billed_micros: String(run.billed ?? 0),
      refunded_micros: String(run.refunded ?? 0),
      estimated_minutes: 1,
      state: run.state ?? 'completed',
      summary: run.summary === undefined ? null : JSON.stringify(run.summary),
      finished_at: ['completed', 'failed', 'cancelled'].includes(run.state ?? 'completed') ? trx.fn.now() : null,
    });
    if (run.billed) await postEntries(trx, org.orgId, [{ kind: 'test_run_charge', amountMicros: -BigInt(run.billed), requestId: id }]);
    return id;
  }

  it('the organisation audits clean: a settled call breaks nothing', async () => {
    assert.deepEqual((await audit(stack().db, stack().env.client, scope())).map(violationLine), []);
  });

  it('balance_equals_ledger: a ledger entry the balance never saw', async () => {
    await assertNames(
      (trx) => trx('ledger_entries').insert({ org_id: org.orgId, kind: 'top_up', amount_micros: '1', note: 'audit test' }),
      'balance_equals_ledger',
      { org_id: org.orgId },
    );
  });

  it('hold_matches_ledger: a held reservation the ledger holds nothing for', async () => {
    const requestId = `req_${randomUUID()}`;
    await assertNames(
      (trx) => trx('reservations').insert({ org_id: org.orgId, request_id: requestId, amount_micros: '1000', state: 'held' }),
      'hold_matches_ledger',
      { org_id: org.orgId, request_id: requestId },
    );
  });

  it('hold_outlives_request: a hold left behind by a request that ended, and one whose running request has no workflow', async () => {
    const requestId = `req_${randomUUID()}`;
    const claim = async (trx: Knex.Transaction, state: string): Promise<void> => {
      await trx('requests').insert({
        id: requestId,
        org_id: org.orgId,
        api_key_id: org.keyId,
        idempotency_key: randomUUID(),
        workflow_id: `dlb/${org.orgId}/${requestId}`,
        fingerprint: 'audit-test',
        mode_id: 'quorum-panel',
        model: 'QRM:PANL',
        state,
      });
      await reserveIn(trx, { orgId: org.orgId, requestId, amountMicros: 2_000_000n });
    };
    const ended = await assertNames((trx) => claim(trx, 'failed'), 'hold_outlives_request', { org_id: org.orgId, request_id: requestId });
    assert.match(ended.find((v) => v.invariant === 'hold_outlives_request')?.detail ?? '', /its request is failed/);
    const orphan = await assertNames((trx) => claim(trx, 'running'), 'hold_outlives_request', {
      org_id: org.orgId,
      request_id: requestId,
      workflow_id: `dlb/${org.orgId}/${requestId}`,
    });
    assert.match(orphan.find((v) => v.invariant === 'hold_outlives_request')?.detail ?? '', /workflow is missing/);
  });

  it('trial_deduction_mismatch: a trial expiry that deducted a micro-dollar more than the unused credit', async () => {
    // Spec 01 item 11: $5 of trial less this organisation's one call, spent from it first.
    const unused = 5_000_000 - call.billedMicros;
    const expire = (trx: Knex.Transaction): Promise<unknown> => expireTrialCredit(trx, org.orgId);
    const expired = await violationsAfter(expire);
    assert.deepEqual(expired.map(violationLine), [], 'the real expiry deducts exactly the unused credit');
    const found = await assertNames(
      async (trx) => {
        await expire(trx);
        await postEntries(trx, org.orgId, [{ kind: 'trial_expiry', amountMicros: -1n, note: 'audit test' }]);
      },
      'trial_deduction_mismatch',
      { org_id: org.orgId },
    );
    assert.match(
      found.find((v) => v.invariant === 'trial_deduction_mismatch')?.detail ?? '',
      new RegExp(`leaves ${unused} µ\\$ unused, but ${unused + 1} µ\\$ was deducted`),
    );
  });

  it('receipt_components: a receipt whose parts do not sum to what it billed', async () => {
    await assertNames(
      (trx) => trx('receipts').where({ request_id: call.requestId }).increment('platform_fee_micros', 1),
      'receipt_components',
      { org_id: org.orgId, request_id: call.requestId },
    );
  });

  it('receipt_seats_unaccounted: seat rows beyond their call; rows short of a call no staff engine worked on', async () => {
    const ids = { org_id: org.orgId, request_id: call.requestId };
    await assertNames(
      async (trx) => {
        const { completion_tokens: completion } = await trx('receipts').where({ request_id: call.requestId }).first('completion_tokens');
        const row = await trx('receipt_seats').where({ request_id: call.requestId }).first('role', 'round_number');
        await trx('receipt_seats')
          .where({ request_id: call.requestId, role: row.role, round_number: row.round_number })
          .update({ tokens_out: completion + 1 });
      },
      'receipt_seats_unaccounted',
      ids,
    );
    // The panel's judge and synthesis took the rest of its tokens; with neither on the receipt, the rows are short.
    await assertNames(
      (trx) =>
        trx('receipts')
          .where({ request_id: call.requestId })
          .update({ outcome: trx.raw(`jsonb_set(jsonb_set(outcome, '{staff,judge}', 'null'), '{staff,synthesis}', 'null')`) }),
      'receipt_seats_unaccounted',
      ids,
    );
  });

  it('charge_without_basis: a charge with no receipt', async () => {
    const requestId = `req_${randomUUID()}`;
    await assertNames(
      (trx) => settleIn(trx, { orgId: org.orgId, requestId, chargeMicros: 1234n }).then(() => undefined),
      'charge_without_basis',
      { org_id: org.orgId, request_id: requestId },
    );
  });

  it('charge_differs_from_bill: a receipt billed one amount and charged another; a run refunded more than it paid', async () => {
    await assertNames(
      (trx) =>
        trx('receipts')
          .where({ request_id: call.requestId })
          .update({
            billed_micros: call.billedMicros + 1,
            gateway_micros: trx.raw('gateway_micros + 1'),
            outcome: trx.raw(`jsonb_set(outcome, '{money,billedMicros}', to_jsonb(?::bigint))`, [call.billedMicros + 1]),
          }),
      'charge_differs_from_bill',
      { org_id: org.orgId, request_id: call.requestId },
    );
    let runId = '';
    await assertNames(
      async (trx) => {
        runId = await insertRun(trx, { billed: 1000 });
        await postEntries(trx, org.orgId, [{ kind: 'run_refund', amountMicros: 2000n, requestId: runId }]);
        await trx('runs').where({ id: runId }).update({ refunded_micros: 2000 });
      },
      'charge_differs_from_bill',
      { org_id: org.orgId },
    );
  });

  it('key_billed_twice: a second answered run under a succeeded key', async () => {
    const copy = `req_${randomUUID()}`;
    await assertNames(
      async (trx) => {
        await trx('requests').where({ id: call.requestId }).update({ superseded_at: trx.fn.now() });
        await trx.raw(
          `insert into requests (id, org_id, api_key_id, idempotency_key, workflow_id, fingerprint, mode_id, model, state, created_at)
           select ?, org_id, api_key_id, idempotency_key, workflow_id, fingerprint, mode_id, model, 'succeeded', now() from requests where id = ?`,
          [copy, call.requestId],
        );
        await trx.raw(
          `insert into receipts select ?, org_id, mode_id, mode_version, config_hash, status, lane, tier, gateway_micros, platform_fee_micros,
                  mode_fee_micros, cap_credit_micros, billed_micros, prompt_tokens, completion_tokens, latency_ms,
                  jsonb_set(outcome, '{requestId}', to_jsonb(?::text)), created_at, completed_at
             from receipts where request_id = ?`,
          [copy, copy, call.requestId],
        );
        await settleIn(trx, { orgId: org.orgId, requestId: copy, chargeMicros: BigInt(call.billedMicros) });
      },
      'key_billed_twice',
      { org_id: org.orgId, idempotency_key: call.idempotencyKey },
    );
  });

  it('run_charge_without_workflow: a charged run Temporal knows nothing of, and a live run whose workflow has ended', async () => {
    let runId = '';
    await assertNames(
      async (trx) => {
        runId = await insertRun(trx, { billed: 5_000_000, state: 'running' });
      },
      'run_charge_without_workflow',
      { org_id: org.orgId },
    );
    // The deliberation's workflow is real and completed: a run row pointing at it says `running` in vain.
    await assertNames(
      async (trx) => {
        runId = await insertRun(trx, { billed: 5_000_000, state: 'queued', workflowId: `dlb/${org.orgId}/${call.idempotencyKey}` });
      },
      'run_charge_without_workflow',
      { org_id: org.orgId, workflow_id: `dlb/${org.orgId}/${call.idempotencyKey}` },
    );
    assert.ok(runId);
  });

  it('certified_without_coverage: a certified verdict whose coverage is missing or not met', async () => {
    for (const summary of [{ verdict: 'certified' }, { verdict: 'certified', coverage: { met: false } }]) {
      await assertNames(
        async (trx) => {
          await insertRun(trx, { kind: 'certification', summary });
        },
        'certified_without_coverage',
        { org_id: org.orgId },
      );
    }
    const clean = await violationsAfter(async (trx) => {
      await insertRun(trx, { kind: 'certification', summary: { verdict: 'certified', coverage: { met: true } } });
      await insertRun(trx, { kind: 'certification', summary: { verdict: 'not_certified' } });
    });
    assert.deepEqual(clean.map(violationLine), []);
  });

  it('run_billed_off_quote: a test run billed other than the sum of its questions’ prices', async () => {
    const prices = { 'light-0001-a': 750, 'hard-0001-b': 2_250 };
    // By hand: 750 + 2,250 = 3,000 µ$ is the quote; a charge of 3,001 is not it.
    const found = await violationsAfter(async (trx) => {
      await insertRun(trx, { billed: 3_001, spec: { questionPrices: prices }, workflowId: 'off-quote' });
      await insertRun(trx, { billed: 3_000, spec: { questionPrices: prices }, workflowId: 'on-quote' });
    });
    const named = found.filter((v) => v.invariant === 'run_billed_off_quote');
    assert.equal(named.length, 1, found.map(violationLine).join('\n'));
    assert.match(named[0].detail, /billed 3001 µ\$, but the prices of its 2 questions sum to 3000 µ\$/);
  });

  it('certification_kept_without_verdict: $50 kept without a verdict, or refunded with one', async () => {
    const verdict = { verdict: 'certified', coverage: { met: true } };
    for (const run of [
      { state: 'incomplete', summary: { verdict: null, coverage: { met: false } }, refunded: 0 },
      { state: 'cancelled', summary: null, refunded: 49_333_333 },
      { state: 'completed', summary: verdict, refunded: 50_000_000 },
    ])
      await assertNames(
        async (trx) => {
          await insertRun(trx, { kind: 'certification', billed: 50_000_000, ...run });
        },
        'certification_kept_without_verdict',
        { org_id: org.orgId },
      );
    const clean = await violationsAfter(async (trx) => {
      await insertRun(trx, { kind: 'certification', billed: 50_000_000, summary: verdict, refunded: 0 });
      await insertRun(trx, { kind: 'certification', billed: 50_000_000, state: 'incomplete', refunded: 50_000_000 });
    });
    assert.deepEqual(clean.filter((v) => v.invariant === 'certification_kept_without_verdict').map(violationLine), []);
  });

  it('listed_version_uncertified: listed at version 2, certified by a live run at version 1 only', async () => {
    const mode = await customMode(org.orgId, 'quorum-panel', {});
    const certified = { verdict: 'certified', coverage: { met: true } };
    await assertNames(
      async (trx) => {
        await trx('modes').where({ id: mode.id }).update({ listing_state: 'listed', listing_version: 2 });
        await insertRun(trx, { kind: 'certification', modeId: mode.id, modeVersion: 1, summary: certified });
        // A test key's run at the listed version is simulated: it certifies nothing.
        await insertRun(trx, { kind: 'certification', modeId: mode.id, modeVersion: 2, keyMode: 'test', summary: certified });
      },
      'listed_version_uncertified',
      { org_id: org.orgId, mode_id: mode.id },
    );
  });

  it('plan_usage_mismatch: a plan charged for a call with no receipt', async () => {
    const personId = `per_${randomUUID()}`;
    const requestId = `req_${randomUUID()}`;
    await assertNames(
      async (trx) => {
        await trx('people').insert({ id: personId, email: `${personId}@audit.test`, name: 'Audit', password_hash: 'x' });
        await trx('plan_usage').insert({
          request_id: requestId,
          org_id: org.orgId,
          person_id: personId,
          plan_id: 'free',
          period: '2026-11-01',
          state: 'settled',
          held_micros: '1000',
          charged_micros: '900',
        });
      },
      'plan_usage_mismatch',
      { org_id: org.orgId, request_id: requestId, person_id: personId },
    );
  });

  it('mode_stats_mismatch: a mode counted with calls its receipts do not hold', async () => {
    const mode = await customMode(org.orgId, 'quorum-panel', {});
    const found = await assertNames(
      (trx) =>
        trx('mode_call_stats').insert({
          mode_id: mode.id,
          config_hash: mode.configHash,
          tier: 'plus',
          n: 3,
          input_tokens: 300,
          output_tokens: 30,
          mode_fee_micros: 42,
        }),
      'mode_stats_mismatch',
      { org_id: org.orgId, mode_id: mode.id },
    );
    const line = found.find((v) => v.invariant === 'mode_stats_mismatch')?.detail ?? '';
    assert.match(line, /counted 3 calls, 300 tokens in, 30 out, 42 µ\$ mode fee; its receipts hold 0, 0, 0, 0 µ\$/);
  });

  it("mode_stats_mismatch: a first wave's count its receipts do not hold (issue 52)", async () => {
    const mode = await customMode(org.orgId, 'quorum-panel', {});
    const found = await assertNames(
      async (trx) => {
        // The settled call, as if it were a call of the organisation's own mode whose first wave stopped early...
        const [x] = (await trx('receipts')
          .where({ request_id: call.requestId })
          .update({
            mode_id: mode.id,
            config_hash: mode.configHash,
            outcome: trx.raw('outcome || ?::jsonb', [JSON.stringify({ aggregation: { seatsAsked: 2, earlyStop: true } })]),
          })
          .returning(['tier', 'prompt_tokens', 'completion_tokens', 'mode_fee_micros'])) as {
          tier: string;
          prompt_tokens: number;
          completion_tokens: number;
          mode_fee_micros: string;
        }[];
        // ...counted with its tokens and fee, but as a call that asked every seat.
        await trx('mode_call_stats').insert({
          mode_id: mode.id,
          config_hash: mode.configHash,
          tier: x.tier,
          n: 1,
          input_tokens: x.prompt_tokens,
          output_tokens: x.completion_tokens,
          mode_fee_micros: x.mode_fee_micros,
          wave_calls: 1,
          wave_all_asked: 1,
        });
      },
      'mode_stats_mismatch',
      { org_id: org.orgId, mode_id: mode.id },
    );
    const line = found.find((v) => v.invariant === 'mode_stats_mismatch' && v.ids.mode_id === mode.id)?.detail ?? '';
    assert.match(
      line,
      /counted 1 calls, .*; its receipts hold 1, .*; of them with their seats asked recorded, counted 1, 1 asking every seat; its receipts hold 1, 0$/,
    );
  });

  it("key_spend_mismatch: a key's month counted with more than its calls' ledger entries hold", async () => {
    const month = new Date().toISOString().slice(0, 7);
    const found = await assertNames(
      (trx) =>
        trx('key_month_spend')
          .where({ org_id: org.orgId, api_key_id: org.keyId })
          .update({ spent_micros: trx.raw('spent_micros + 7') }),
      'key_spend_mismatch',
      { org_id: org.orgId, key_id: org.keyId },
    );
    const line = found.find((v) => v.invariant === 'key_spend_mismatch')?.detail ?? '';
    // The one call of the key, settled: what it billed, nothing held.
    assert.equal(
      line,
      `${month}: counted ${call.billedMicros + 7} µ$ spent, 0 µ$ held; its calls' ledger entries hold ${call.billedMicros}, 0`,
    );
  });

  it('streamed_answer_differs: answer pieces stored that do not begin the answer its receipt records; pieces that do are not named', async () => {
    const receipt = (await stack().db('receipts').where({ request_id: call.requestId }).first('outcome')) as {
      outcome: { answer: string };
    };
    const answer = receipt.outcome.answer;
    assert.ok(answer.length > 10, 'the call has an answer to begin');
    // The pieces in place of whatever the call itself stored (a panel whose synthesis streamed stores its answer whole).
    const piece = async (trx: Knex.Transaction, part: number, text: string): Promise<void> => {
      if (part === 0) await trx('answer_chunks').where({ request_id: call.requestId }).delete();
      await trx('answer_chunks').insert({ request_id: call.requestId, step: 1, part, text });
    };
    const found = await assertNames(
      async (trx) => {
        await piece(trx, 0, answer.slice(0, 5));
        await piece(trx, 1, 'not how the answer goes on');
      },
      'streamed_answer_differs',
      { org_id: org.orgId, request_id: call.requestId },
    );
    assert.equal(
      found.find((v) => v.invariant === 'streamed_answer_differs')?.detail,
      `2 piece(s) of its answer were streamed (${5 + 'not how the answer goes on'.length} characters) that do not begin the answer its receipt records (${answer.length} characters)`,
    );
    const beginning = await violationsAfter(async (trx) => {
      await piece(trx, 0, answer.slice(0, 5));
      await piece(trx, 1, answer.slice(5, 10));
    });
    assert.deepEqual(beginning, [], 'pieces that begin the answer are what was streamed');
  });

  it('workflow_task_failing: a workflow whose task fails on every try is named with its failure; one waiting for a worker is not', async () => {
    const client = stack().env.client;
    const start = (taskQueue: string): Promise<WorkflowHandle> =>
      client.workflow.start('noSuchWorkflow', {
        taskQueue,
        workflowId: `audit-stuck/${org.orgId}/${randomUUID()}`,
        // A short task timeout: after its first failure the SDK lets each retry time out rather than report it again.
        workflowTaskTimeout: '1 second',
        typedSearchAttributes: [{ key: QuorumOrg, value: org.orgId }],
      });
    // A type no worker exports fails its task on the product's queue, as a bad deploy's workflow would, every try.
    const stuck = await start(TASK_QUEUES.deliberation);
    // A queue no worker polls: its task is only waiting.
    const waiting = await start(`audit-unpolled-${randomUUID()}`);
    try {
      await until(
        async () => ((await stuck.describe()).raw.pendingWorkflowTask?.attempt ?? 0) >= 3,
        90_000,
        'the task failed and retried twice',
      );
      const found = await assertNames(async () => undefined, 'workflow_task_failing', { workflow_id: stuck.workflowId });
      const named = found.filter((v) => v.invariant === 'workflow_task_failing');
      assert.deepEqual(
        named.map((v) => v.ids.workflow_id),
        [stuck.workflowId],
        'only the failing workflow: the one waiting for a worker is not stuck',
      );
      assert.match(
        named[0]?.detail ?? '',
        /failed and is on attempt \d+, so the workflow makes no progress: .*noSuchWorkflow.*no such function is exported/,
      );
    } finally {
      await Promise.all([stuck.terminate('audit test'), waiting.terminate('audit test')]);
    }
  });

  it('quorum audit prints each violation with its ids and exits 1, then 0 once the state is repaired', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-audit-'));
    const temporal = { TEMPORAL_ADDRESS: stack().env.address, TEMPORAL_NAMESPACE: stack().namespace };
    // A hold left behind, committed: the one broken state here that can be repaired (the ledger is append-only).
    const requestId = `req_${randomUUID()}`;
    await reserve(stack().db, { orgId: org.orgId, requestId, amountMicros: 1_000_000n });
    try {
      const text = await quorumCli(['audit', '--org', org.orgId], dataDir, temporal);
      assert.equal(text.code, 1, text.stderr);
      assert.match(
        text.stdout,
        new RegExp(`hold_outlives_request: org_id=${org.orgId} request_id=${requestId} — .*its request is missing`),
      );
      assert.match(text.stdout, /1 violation\(s\) over organisations .*: hold_outlives_request 1\./);
      const json = await quorumCli(['audit', '--org', org.orgId, '--json'], dataDir, temporal);
      assert.equal(json.code, 1, json.stderr);
      const body = JSON.parse(json.stdout) as { ok: boolean; temporal_checked: boolean; violations: Violation[] };
      assert.deepEqual(
        [body.ok, body.temporal_checked, body.violations.map((v) => [v.invariant, v.ids])],
        [false, true, [['hold_outlives_request', { org_id: org.orgId, request_id: requestId }]]],
      );
    } finally {
      await release(stack().db, { orgId: org.orgId, requestId });
    }
    const clean = await quorumCli(['audit', '--org', org.orgId, '--json'], dataDir, temporal);
    assert.equal(clean.code, 0, clean.stdout + clean.stderr);
    assert.deepEqual(JSON.parse(clean.stdout), { ok: true, temporal_checked: true, violations: [] });
    // Without Temporal the workflows are not checked: a failure, unless the operator asked for the database only.
    const unreachable = await quorumCli(['audit', '--org', org.orgId], dataDir);
    assert.equal(unreachable.code, 1);
    assert.match(unreachable.stdout, /Temporal not reachable: workflows NOT checked/);
    const databaseOnly = await quorumCli(['audit', '--org', org.orgId, '--database-only'], dataDir);
    assert.equal(databaseOnly.code, 0, databaseOnly.stdout + databaseOnly.stderr);
    const count = Object.keys(INVARIANTS).length;
    assert.match(
      databaseOnly.stdout,
      new RegExp(`^No violations: ${count} invariants hold over organisations .* \\(database only\\)\\.$`, 'm'),
    );
  });

  it('the organisation audits clean again: every corruption was rolled back', async () => {
    assert.deepEqual((await audit(stack().db, stack().env.client, scope())).map(violationLine), []);
  });
});
