import assert from 'node:assert/strict';
import { loadConfig } from '../../../infra/config';
import { randomUUID } from 'node:crypto';
import { createBenchmarkActivities } from '../../../activities/benchmark';
import { launchRun, recordQuestionResult } from '../../../db/repositories/runs';
import type { Form } from '../../../domain/form';
import type { JudgeSlot } from '../../../domain/run-judging';
import { certificationSpec } from '../../../domain/runs';
import { createEngines } from '../../../engines';
import { createLogger } from '../../../infra/log';
import { CertifyPollSchema } from '../../../api/v1/run-resources';
import { exemptFromAudit } from '../../harness/audit';
import { stack } from '../../harness/stack';
import { call, FORMS, newOrg, startApi, type Api, type TestOrg } from '../api/helpers';
import { demoModes, everyJudge, judgedRow } from './helpers';
import { settingsOf, testSecretBox } from '../../harness/settings';

/**
 * Issue 38 items 2 and 3 on the real database and API: certifications launched by the repository (charged, as a
 * launch is) and ended by the run's own end step (`finishRun`, as its workflow calls it) over question rows written
 * as a question's workflow writes them, so the judges' verdicts are exactly those the test chose. What callers are
 * shown is read through the API in both Forms.
 */
describe('runs: certification attempts and the judges a verdict needs', function () {
  this.timeout(120_000);
  const apis = {} as Record<Form, Api>;
  const activities = (): ReturnType<typeof createBenchmarkActivities> =>
    createBenchmarkActivities({
      db: stack().db,
      engines: createEngines({ ...settingsOf({}) }),
      log: createLogger('test', () => undefined),
      config: loadConfig(),
      box: testSecretBox(),
    });

  before(async () => {
    for (const form of FORMS) apis[form] = await startApi(form);
  });
  after(async () => {
    for (const form of FORMS) await apis[form].close();
  });

  /** A live certification of the org's strong demo mode (version 1), charged $50 as a launch is; its id. */
  async function launch(org: TestOrg, modeId: string, ticker: string): Promise<string> {
    const runId = randomUUID();
    const launched = await launchRun(
      stack().db,
      {
        id: runId,
        orgId: org.orgId,
        kind: 'certification',
        workflowId: `cert/${org.orgId}/${runId}`,
        idempotencyKey: runId,
        fingerprint: 'attempts-test',
        keyKind: 'live',
        apiKeyId: org.keyId,
        modeId,
        modeVersion: 1,
        model: ticker,
        spec: certificationSpec(38),
        totalQuestions: 150,
        billedMicros: 50_000_000,
        estimatedMinutes: 30,
      },
      10,
    );
    assert.ok('created' in launched && launched.created);
    return runId;
  }

  /**
   * 150 questions (50 per bucket), each judged by all three judges on both repeats: the first `wins` questions all
   * wins, the rest all losses; a judge `silent` gives no readable verdict.
   */
  async function record(runId: string, wins: number, silent: JudgeSlot | null = null): Promise<void> {
    for (let i = 0; i < 150; i++) {
      const bucket = (['light', 'medium', 'hard'] as const)[Math.floor(i / 50)];
      const row = judgedRow(
        `q${i}`,
        bucket,
        everyJudge((slot) => (slot === silent ? null : i < wins ? 'win' : 'loss')),
      );
      await recordQuestionResult(stack().db, runId, { ...row, cluster: `c${i % 7}` });
    }
  }

  it('a judge silent throughout: every question judged by the other two, yet the certification ends incomplete, without a verdict, and says which judge', async () => {
    const org = await newOrg(60);
    exemptFromAudit(org.orgId, ['run_charge_without_workflow'], 'runs launched and ended by their repository functions, with no workflow');
    const modes = await demoModes(org.orgId);
    const runId = await launch(org, modes.strong.A, modes.strong.B);
    // Every question a win from judge_a and judge_b: before issue 38 this was 150 of 150 questions covered, certified.
    await record(runId, 150, 'judge_c');
    const summary = await activities().finishRun({ runId, kind: 'certification', state: 'completed' });
    assert.equal(summary?.verdict, null);
    const row = (await stack().db('runs').where({ id: runId }).first('state', 'billed_micros', 'refunded_micros')) as {
      state: string;
      billed_micros: string;
      refunded_micros: string;
    };
    assert.equal(row.state, 'incomplete');
    // No verdict, no charge (issue 38 item 7): the $50 comes back whole, though every question was judged.
    assert.deepEqual([Number(row.billed_micros), Number(row.refunded_micros)], [50_000_000, 50_000_000]);
    const refunds = (await stack().db('ledger_entries').where({ org_id: org.orgId, kind: 'run_refund', request_id: runId })) as {
      amount_micros: string;
    }[];
    assert.deepEqual(
      refunds.map((e) => Number(e.amount_micros)),
      [50_000_000],
    );

    for (const form of FORMS) {
      const poll = await call(apis[form], 'GET', `/v1/certify?batch_id=${runId}`, { key: org.ownerKey });
      assert.equal(poll.status, 200, JSON.stringify(poll.body));
      const p = CertifyPollSchema.parse(poll.body);
      assert.equal(p.batch.state, 'incomplete');
      assert.equal(p.certification, null);
      const c = p.batch.coverage;
      assert.ok(c?.judgments, JSON.stringify(c));
      // By hand: 150 questions × 2 repeats × 3 judges = 900 planned; judge_c's 300 unread, 600 read; per judge and
      // bucket 50 × 2 = 100 planned, judge_c 0 of them.
      assert.deepEqual([c.judged, c.total, c.judgments.readable, c.judgments.planned, c.met], [150, 150, 600, 900, false]);
      const names = form === 'A' ? ['light', 'medium', 'hard'] : ['easy', 'medium', 'hard'];
      for (const b of names) {
        assert.deepEqual(c.judgments.per_judge.judge_c[b], { readable: 0, planned: 100 }, `Form ${form}, ${b}`);
        assert.deepEqual(c.judgments.per_judge.judge_a[b], { readable: 100, planned: 100 }, `Form ${form}, ${b}`);
      }
      assert.ok(
        p.batch.warnings.some((w) => w.includes(`judge_c 0 of 100 in ${names[0]}`)),
        JSON.stringify(p.batch.warnings),
      );
      // The attempt is disclosed, without a verdict.
      assert.deepEqual(
        p.attempts.map((a) => [a.batch_id, a.attempt, a.state, a.verdict]),
        [[runId, 1, 'incomplete', null]],
      );
    }
  });

  it('attempts on one configuration: the second is held to α_2 and cannot buy the verdict; every attempt is shown with its verdict', async () => {
    const org = await newOrg(200);
    const other = await newOrg();
    exemptFromAudit(org.orgId, ['run_charge_without_workflow'], 'runs launched and ended by their repository functions, with no workflow');
    const modes = await demoModes(org.orgId);
    const first = await launch(org, modes.strong.A, modes.strong.B);
    const second = await launch(org, modes.strong.A, modes.strong.B);
    const third = await launch(org, modes.strong.A, modes.strong.B);
    // The same results twice: 90 of 150 questions all wins, 60 all losses.
    await record(first, 90);
    await record(second, 90);
    const end = activities();
    await end.finishRun({ runId: first, kind: 'certification', state: 'completed' });
    await end.finishRun({ runId: second, kind: 'certification', state: 'completed' });
    await end.finishRun({ runId: third, kind: 'certification', state: 'cancelled' });

    // By hand. p̂ = 90/150 = 0.6. Every question is its own cluster of 6 equal scores, so with G = 150, N = 900:
    // SE² = G/(G−1) · 36 · 150 · p̂(1−p̂) / N² = p̂(1−p̂)/149 = 0.24/149, SE = 0.0401340. Quantiles of t(149)
    // (mpmath): t(0.975) = 1.9760132, t(1 − α_1) = 2.2752522, t(1 − α_2) = 2.7832531, with α_1 = 0.02·6/π² =
    // 0.0121585 and α_2 = α_1/4 = 0.0030396.
    const se = Math.sqrt(0.24 / 149);
    const plain = { low: 0.6 - 1.9760132 * se, high: 0.6 + 1.9760132 * se };
    const firstBound = 0.6 - 2.2752522 * se; // 0.5087: above 0.5, certified
    const secondBound = 0.6 - 2.7832531 * se; // 0.4883: not above 0.5; the plain bound 0.5207 makes it provisional
    const close = (a: number | null | undefined, b: number, what: string): void =>
      assert.ok(a !== null && a !== undefined && Math.abs(a - b) <= 1e-4, `${what}: ${a} vs ${b}`);

    for (const form of FORMS) {
      const p = CertifyPollSchema.parse((await call(apis[form], 'GET', `/v1/certify?batch_id=${second}`, { key: org.ownerKey })).body);
      assert.equal(p.certification?.verdict, 'provisional', `Form ${form}: ${JSON.stringify(p.certification)}`);
      close(p.certification?.lower_bound, plain.low, 'plain 95% bound');
      close(p.certification?.interval?.high, plain.high, 'plain 95% interval');
      assert.equal(p.certification?.attempt?.number, 2);
      close(p.certification?.attempt?.alpha, 0.0030396, 'α_2');
      close(p.certification?.attempt?.adjusted_lower_bound, secondBound, 'bound at α_2');
      assert.equal(p.certification?.tier, 'plus');
      assert.equal(p.certification?.question_set.questions, 150);
      assert.deepEqual(
        p.attempts.map((a) => [a.batch_id, a.attempt, a.state, a.verdict]),
        [
          [first, 1, 'completed', 'certified'],
          [second, 2, 'completed', 'provisional'],
          [third, 3, 'cancelled', null],
        ],
      );
      close(p.attempts[0].adjusted_lower_bound, firstBound, 'bound at α_1');
      close(p.attempts[0].alpha, 0.0121585, 'α_1');

      // The listing, to anyone: the attempt that certified, with every attempt beside it.
      const models = await call(apis[form], 'GET', '/v1/models', { key: other.ownerKey });
      const entry = (models.body.data as { id: string; svc: { certification: Record<string, unknown> | null } }[]).find(
        (e) => e.id === modes.strong[form],
      );
      const c = entry?.svc.certification as { verdict: string; batch_id: string; attempt: number; attempts: { verdict: string | null }[] };
      assert.deepEqual(
        [c.verdict, c.batch_id, c.attempt, c.attempts.map((a) => a.verdict)],
        ['certified', first, 1, ['certified', 'provisional', null]],
        `Form ${form}`,
      );
    }
  });
});
