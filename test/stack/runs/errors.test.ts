import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { launchFingerprint } from '../../../operations/run-launch';
import { launchRun } from '../../../db/repositories/runs';
import { setListingState } from '../../../db/repositories/modes';
import type { Form } from '../../../domain/form';
import { certificationSpec } from '../../../domain/runs';
import { workflowIds } from '../../../domain/workflow-ids';
import { LaunchSchema } from '../../../api/v1/run-resources';
import { call, FORMS, moneySnapshot, newKey, newOrg, PANEL, startApi, type Api, type TestOrg } from '../api/helpers';
import { customMode, startProductWorkers } from '../deliberation/helpers';
import { stack } from '../../harness/stack';
import { demoModes } from './helpers';

/** Every error the run endpoints name (spec 02 "Run and batch codes"), in both Forms; a refused launch changes nothing. */
describe('runs: request rules and error codes', function () {
  this.timeout(120_000);
  const apis = {} as Record<Form, Api>;
  let org: TestOrg;
  let modes: Awaited<ReturnType<typeof demoModes>>;
  // A launch is admitted (its row and charge) by its workflow's first step, so a worker must be there to take it.
  let workers: { stop(): Promise<void> };

  before(async () => {
    workers = await startProductWorkers();
    for (const form of FORMS) apis[form] = await startApi(form, { runs: { testsPerDay: 20, certificationsPerDay: 3, window: 4 } });
    org = await newOrg(100);
    modes = await demoModes(org.orgId);
  });
  after(async () => {
    for (const form of FORMS) await apis[form].close();
    await workers.stop();
  });

  /** A dry run of one question: valid unless the case changes it. */
  const valid = (form: Form): Record<string, unknown> =>
    form === 'A'
      ? { model: modes.strong.A, buckets: { light: 1 }, dry_run: true }
      : { model: modes.strong.B, questions: { easy: 1 }, dry_run: true };

  const refuses = async (form: Form, body: Record<string, unknown>, status: number, code: string, path = '/v1/tests'): Promise<void> => {
    const before = await moneySnapshot(org.orgId);
    const r = await call(apis[form], 'POST', path, { key: org.ownerKey, body });
    assert.equal(r.status, status, `${form} ${JSON.stringify(body)} → ${JSON.stringify(r.body)}`);
    assert.equal(r.body.error?.code, code, `${form} ${JSON.stringify(body)}`);
    assert.equal(await moneySnapshot(org.orgId), before, 'a refused launch changes nothing');
  };

  it('Form A: buckets, judges, repeats, protocol and dry_run are checked, each with its code', async () => {
    const base = valid('A');
    const cases: [Record<string, unknown>, string][] = [
      [{ ...base, buckets: undefined }, 'invalid_buckets'],
      [{ ...base, buckets: [1, 2] }, 'invalid_buckets'],
      [{ ...base, buckets: {} }, 'invalid_buckets'],
      [{ ...base, buckets: { easy: 3 } }, 'invalid_buckets'],
      [{ ...base, buckets: { light: 0 } }, 'invalid_bucket_count'],
      [{ ...base, buckets: { light: 101 } }, 'invalid_bucket_count'],
      [{ ...base, buckets: { light: 2.5 } }, 'invalid_bucket_count'],
      [{ ...base, buckets: { light: '3' } }, 'invalid_bucket_count'],
      [{ ...base, judges: [] }, 'invalid_judges'],
      [{ ...base, judges: ['judge_d'] }, 'invalid_judges'],
      [{ ...base, judges: ['judge_a', 'judge_a'] }, 'invalid_judges'],
      [{ ...base, judge_repeats: 4 }, 'invalid_request'],
      [{ ...base, judge_repeats: 0 }, 'invalid_request'],
      [{ ...base, judging_protocol: 'ranked' }, 'invalid_request'],
      [{ ...base, dry_run: 'yes' }, 'invalid_request'],
      [{ ...base, model: undefined }, 'invalid_model'],
    ];
    for (const [body, code] of cases) await refuses('A', body, 400, code);
  });

  it('Form B: questions, legacy buckets, tiers and punch_up are checked, each with its code', async () => {
    const base = valid('B');
    const cases: [Record<string, unknown>, string][] = [
      [{ ...base, questions: undefined }, 'invalid_questions'],
      [{ ...base, questions: 5 }, 'invalid_questions'],
      [{ ...base, questions: {} }, 'invalid_questions'],
      [{ ...base, questions: { light: 3 } }, 'invalid_difficulty'],
      [{ ...base, questions: { easy: -1 } }, 'invalid_question_count'],
      [{ ...base, questions: { easy: 2.5 } }, 'invalid_question_count'],
      [{ ...base, questions: { easy: 301 } }, 'invalid_question_count'],
      [{ ...base, questions: { easy: 0, hard: 0 } }, 'invalid_question_count'],
      [{ ...base, questions: { easy: 200, hard: 200 } }, 'too_many_questions'],
      [{ ...base, questions: undefined, buckets: { easy: 3 } }, 'invalid_bucket'],
      [{ ...base, questions: undefined, buckets: { light: 250, hard: 100 } }, 'too_many_questions'],
      [{ ...base, tiers: [] }, 'invalid_tiers'],
      [{ ...base, tiers: ['gold'] }, 'invalid_tiers'],
      [{ ...base, tiers: 'plus' }, 'invalid_tiers'],
      [{ ...base, punch_up: 'yes' }, 'invalid_punch_up'],
      [{ ...base, judges: ['judge_z'] }, 'invalid_request'],
      [{ ...base, model: undefined }, 'invalid_model'],
    ];
    for (const [body, code] of cases) await refuses('B', body, 400, code);
    // The legacy form and Form B's own names are both accepted.
    for (const body of [
      { ...base, questions: undefined, buckets: { light: 2, hard: 1 } },
      { ...base, tiers: ['free', 'plus'], punch_up: true },
    ]) {
      const r = await call(apis.B, 'POST', '/v1/tests', { key: org.ownerKey, body });
      assert.equal(r.status, 200, JSON.stringify(r.body));
    }
  });

  it('a launch without `model` is 400 invalid_model on both endpoints in both Forms (spec 01 table)', async () => {
    for (const form of FORMS) {
      await refuses(form, { ...valid(form), model: undefined }, 400, 'invalid_model');
      await refuses(form, { dry_run: true }, 400, 'invalid_model', '/v1/certify');
    }
  });

  it('a mode that does not exist is 404; one the caller does not own is 403 mode_not_owned; a key without the scope is 403', async () => {
    for (const form of FORMS) {
      await refuses(form, { ...valid(form), model: form === 'A' ? 'no-such-mode' : 'NOPE:NOPE' }, 404, 'model_not_found');
      await refuses(form, { ...valid(form), model: PANEL[form] }, 403, 'mode_not_owned');
      await refuses(form, { model: PANEL[form] }, 403, 'mode_not_owned', '/v1/certify');
      const other = await newOrg(10);
      // Listed, another organisation's mode is visible to all but theirs alone to test; unlisted, it is not even visible.
      const listed = await call(apis[form], 'POST', '/v1/tests', { key: other.ownerKey, body: valid(form) });
      assert.equal(listed.body.error?.code, 'mode_not_owned');
      await setListingState(stack().db, modes.strong.A, null);
      try {
        const r = await call(apis[form], 'POST', '/v1/tests', { key: other.ownerKey, body: valid(form) });
        assert.equal(r.status, 404, 'another organisation’s unlisted mode is not even visible');
      } finally {
        await setListingState(stack().db, modes.strong.A, 'listed');
      }
      const noScope = await newKey(org.orgId, { scopes: ['completions'] });
      const s = await call(apis[form], 'POST', '/v1/tests', { key: noScope, body: valid(form) });
      assert.equal(s.body.error?.code, 'insufficient_scope');
    }
  });

  it('a dry run prices and estimates without starting or charging anything', async () => {
    for (const form of FORMS) {
      const before = await moneySnapshot(org.orgId);
      const runs = await stack().db('runs').where({ org_id: org.orgId }).count<{ n: string }[]>('* as n');
      const body =
        form === 'A'
          ? { model: modes.strong.A, buckets: { light: 10, medium: 10, hard: 10 }, dry_run: true }
          : { model: modes.strong.B, questions: { easy: 10, medium: 10, hard: 10 }, dry_run: true };
      const r = await call(apis[form], 'POST', '/v1/tests', { key: org.ownerKey, body });
      assert.equal(r.status, 200);
      const v = LaunchSchema.parse(r.body);
      assert.equal(v.dry_run, true);
      assert.equal(v.batch_id, null);
      assert.equal(v.total_questions, 30);
      assert.deepEqual(v.per_bucket, form === 'A' ? { light: 10, medium: 10, hard: 10 } : { easy: 10, medium: 10, hard: 10 });
      assert.ok((v.total_cost_usd ?? 0) > 0 && v.billed_usd === undefined);
      assert.ok(v.estimated_minutes >= 1);
      assert.equal(await moneySnapshot(org.orgId), before);
      assert.deepEqual(await stack().db('runs').where({ org_id: org.orgId }).count<{ n: string }[]>('* as n'), runs);
    }
  });

  it('price_unavailable: a mode with an engine the catalog cannot price', async () => {
    const mode = await customMode(org.orgId, 'quorum-panel', {
      tiers: {
        experience: { seats: ['openai/gpt-4.1-mini'] },
        plus: { seats: ['openai/not-in-catalog', 'anthropic/claude-sonnet-4', 'google/gemini-2.5-flash'] },
      },
    });
    await refuses('A', { model: mode.id, buckets: { light: 1 }, dry_run: true }, 400, 'price_unavailable');
    await refuses('B', { model: mode.ticker, questions: { easy: 1 }, dry_run: true }, 400, 'price_unavailable');
  });

  it('provider_unavailable (Form B 409, Form A launch_refused): a live run never sits simulated engines in for a missing provider', async () => {
    const mode = await customMode(org.orgId, 'quorum-panel', {});
    await refuses('B', { model: mode.ticker, questions: { easy: 1 } }, 409, 'provider_unavailable');
    await refuses('A', { model: mode.id, buckets: { light: 1 } }, 400, 'launch_refused');
    // A test key runs the same mode on sim engines, and bills nothing.
    const test = await newKey(org.orgId, { keyKind: 'test' });
    const before = await moneySnapshot(org.orgId);
    const r = await call(apis.B, 'POST', '/v1/tests', { key: test, body: { model: mode.ticker, questions: { easy: 1 } } });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.billed_usd, 0);
    assert.equal(await moneySnapshot(org.orgId), before);
  });

  it('insufficient_balance (Form B 402, Form A launch_refused): nothing is written', async () => {
    const poor = await newOrg(1);
    const own = await demoModes(poor.orgId);
    for (const form of FORMS) {
      const before = await moneySnapshot(poor.orgId);
      const r = await call(apis[form], 'POST', '/v1/certify', { key: poor.ownerKey, body: { model: own.strong[form] } });
      assert.equal(r.status, form === 'B' ? 402 : 400, JSON.stringify(r.body));
      assert.equal(r.body.error?.code, form === 'B' ? 'insufficient_balance' : 'launch_refused');
      assert.equal(await moneySnapshot(poor.orgId), before);
      assert.equal(Number((await stack().db('runs').where({ org_id: poor.orgId }).count<{ n: string }[]>('* as n'))[0].n), 0);
    }
  });

  it('Form B certifies listed modes only: requires_listing on a dry run, listing_required on a launch; Form A certifies privately', async () => {
    const unlisted = await demoModes(org.orgId);
    await setListingState(stack().db, unlisted.strong.A, null);
    const dry = await call(apis.B, 'POST', '/v1/certify', { key: org.ownerKey, body: { model: unlisted.strong.B, dry_run: true } });
    assert.equal(dry.status, 200);
    assert.equal(dry.body.requires_listing, true);
    assert.equal(dry.body.total_cost_usd, 50);
    await refuses('B', { model: unlisted.strong.B }, 400, 'listing_required', '/v1/certify');
    const a = await call(apis.A, 'POST', '/v1/certify', { key: org.ownerKey, body: { model: unlisted.strong.A, dry_run: true } });
    assert.equal(a.status, 200);
    assert.equal(a.body.requires_listing, undefined);
  });

  it('Idempotency-Key (Form B): the same body replays the same run and charges once; another body is 422', async () => {
    const key = randomUUID();
    const body = { model: modes.weak.B, questions: { easy: 1 } };
    const before = await moneySnapshot(org.orgId);
    const first = await call(apis.B, 'POST', '/v1/tests', { key: org.ownerKey, body, headers: { 'Idempotency-Key': key } });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const again = await call(apis.B, 'POST', '/v1/tests', { key: org.ownerKey, body, headers: { 'Idempotency-Key': key } });
    assert.equal(again.body.batch_id, first.body.batch_id);
    const ledger = await stack()
      .db('ledger_entries')
      .where({ org_id: org.orgId, kind: 'test_run_charge', request_id: first.body.batch_id });
    assert.equal(ledger.length, 1);
    assert.notEqual(await moneySnapshot(org.orgId), before);
    const after = await moneySnapshot(org.orgId);
    const other = await call(apis.B, 'POST', '/v1/tests', {
      key: org.ownerKey,
      body: { ...body, questions: { easy: 2 } },
      headers: { 'Idempotency-Key': key },
    });
    assert.equal(other.status, 422);
    assert.equal(other.body.error?.code, 'idempotency_key_reused');
    assert.equal(await moneySnapshot(org.orgId), after);
  });

  it('reconciliation_required: a launch cut off between its charge and its start is credited back, and its key refused', async () => {
    const key = randomUUID();
    const body = { model: modes.weak.B };
    const request = {
      model: modes.weak.B,
      dryRun: false,
      ...certificationSpec(0),
      counts: certificationSpec(0).counts,
      questionSetId: null,
    };
    const mode = (await stack().db('modes').where({ id: modes.weak.A }).first('current_version')) as { current_version: number };
    // The API died after writing the run and its charge, before the workflow started: exactly what launchRun leaves.
    const runId = randomUUID();
    const launched = await launchRun(
      stack().db,
      {
        id: runId,
        orgId: org.orgId,
        kind: 'certification',
        workflowId: workflowIds.certification(org.orgId, key),
        idempotencyKey: key,
        fingerprint: launchFingerprint('certification', {
          model: request.model,
          counts: request.counts,
          judges: request.judges,
          repeats: request.repeats,
          protocol: request.protocol,
          dryRun: false,
          tiers: request.tiers,
          punchUp: false,
          questionSetId: null,
        }),
        keyKind: 'live',
        apiKeyId: org.keyId,
        modeId: modes.weak.A,
        modeVersion: mode.current_version,
        model: modes.weak.B,
        spec: certificationSpec(1),
        totalQuestions: 150,
        billedMicros: 50_000_000,
        estimatedMinutes: 30,
      },
      3,
    );
    assert.ok('created' in launched && launched.created);
    const charged = await moneySnapshot(org.orgId);
    const r = await call(apis.B, 'POST', '/v1/certify', { key: org.ownerKey, body, headers: { 'Idempotency-Key': key } });
    assert.equal(r.status, 409, JSON.stringify(r.body));
    assert.equal(r.body.error?.code, 'reconciliation_required');
    const refund = await stack().db('ledger_entries').where({ org_id: org.orgId, kind: 'run_refund', request_id: runId });
    assert.equal(refund.length, 1);
    assert.equal(BigInt(refund[0].amount_micros), 50_000_000n);
    assert.notEqual(await moneySnapshot(org.orgId), charged);
    const again = await call(apis.B, 'POST', '/v1/certify', { key: org.ownerKey, body, headers: { 'Idempotency-Key': key } });
    assert.equal(again.body.error?.code, 'reconciliation_required');
    assert.equal(
      (await stack().db('ledger_entries').where({ org_id: org.orgId, kind: 'run_refund', request_id: runId })).length,
      1,
      'refunded once',
    );
  });

  it('daily launch limits: 429 with Retry-After 3600, per kind', async () => {
    const limited = await startApi('B', { runs: { testsPerDay: 1, certificationsPerDay: 1, window: 1 } });
    try {
      const o = await newOrg(10);
      const own = await demoModes(o.orgId);
      const test = await newKey(o.orgId, { keyKind: 'test' });
      const first = await call(limited, 'POST', '/v1/tests', { key: test, body: { model: own.weak.B, questions: { easy: 1 } } });
      assert.equal(first.status, 200, JSON.stringify(first.body));
      // The same request again is the same run (its derived key), not a second launch.
      const repeat = await call(limited, 'POST', '/v1/tests', { key: test, body: { model: own.weak.B, questions: { easy: 1 } } });
      assert.equal(repeat.body.batch_id, first.body.batch_id);
      const second = await call(limited, 'POST', '/v1/tests', { key: test, body: { model: own.weak.B, questions: { easy: 2 } } });
      assert.equal(second.status, 429);
      assert.equal(second.body.error?.code, 'test_launch_limit_exceeded');
      assert.equal(second.headers.get('retry-after'), '3600');
      // A dry run is not a launch.
      assert.equal(
        (await call(limited, 'POST', '/v1/tests', { key: test, body: { model: own.weak.B, questions: { easy: 1 }, dry_run: true } }))
          .status,
        200,
      );
      const cert = await call(limited, 'POST', '/v1/certify', { key: test, body: { model: own.weak.B } });
      assert.equal(cert.status, 200, JSON.stringify(cert.body));
      const certAgain = await call(limited, 'POST', '/v1/certify', {
        key: test,
        body: { model: own.weak.B },
        headers: { 'Idempotency-Key': randomUUID() },
      });
      assert.equal(certAgain.body.error?.code, 'certify_launch_limit_exceeded');
      assert.equal(certAgain.headers.get('retry-after'), '3600');
      await stack()
        .env.client.workflow.getHandle((await stack().db('runs').where({ id: cert.body.batch_id }).first('workflow_id')).workflow_id)
        .terminate('test cleanup');
    } finally {
      await limited.close();
    }
  });

  it('polls: missing_batch_id 400; an unknown id, another kind or another organisation is 404 (batch_not_found in Form B)', async () => {
    // An organisation of its own: the other cases spent most of the owner key's requests per minute.
    const org = await newOrg(10);
    const modes = await demoModes(org.orgId);
    const launched = await call(apis.B, 'POST', '/v1/tests', { key: org.ownerKey, body: { model: modes.weak.B, questions: { easy: 1 } } });
    const id = launched.body.batch_id as string;
    const other = await newOrg(5);
    for (const form of FORMS) {
      for (const path of ['/v1/tests', '/v1/certify', '/v1/tests?batch_id=']) {
        const r = await call(apis[form], 'GET', path, { key: org.ownerKey });
        assert.equal(r.status, 400);
        assert.equal(r.body.error?.code, 'missing_batch_id');
      }
      const notFound = form === 'B' ? 'batch_not_found' : 'not_found';
      for (const [key, path] of [
        [org.ownerKey, `/v1/tests?batch_id=${randomUUID()}`],
        [org.ownerKey, '/v1/tests?batch_id=not-a-uuid'],
        [org.ownerKey, `/v1/certify?batch_id=${id}`],
        [other.ownerKey, `/v1/tests?batch_id=${id}`],
      ] as const) {
        const r = await call(apis[form], 'GET', path, { key });
        assert.equal(r.status, 404, path);
        assert.equal(r.body.error?.code, notFound);
      }
      assert.equal((await call(apis[form], 'GET', `/v1/tests?batch_id=${id}`, { key: org.ownerKey })).status, 200);
    }
  });
});
