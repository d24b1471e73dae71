import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Form } from '../../../domain/form';
import { LaunchSchema, TestPollSchema } from '../../../api/v1/run-resources';
import { call, FORMS, moneySnapshot, newKey, newOrg, startApi, type Api, type TestOrg } from '../api/helpers';
import { startProductWorkers } from '../deliberation/helpers';
import { connect, json } from '../mcp/helpers';
import { stack } from '../../harness/stack';
import { demoModes, untilEnded } from './helpers';

/** A run's questions as its rows hold them: id → reference answer and cluster. */
async function questionsOf(runId: string): Promise<Map<string, string>> {
  const rows = (await stack().db('run_questions').where({ run_id: runId }).select('question_id', 'result')) as {
    question_id: string;
    result: { reference: string; cluster: string };
  }[];
  return new Map(rows.map((r) => [r.question_id, `${r.result.cluster} | ${r.result.reference}`]));
}

/** Each question's mean judge score in a run (win 1, tie ½, loss 0, unread verdicts left out) and how many were read. */
async function meanScores(runId: string): Promise<Map<string, { mean: number; n: number }>> {
  const rows = (await stack().db('run_questions').where({ run_id: runId }).select('question_id', 'result')) as {
    question_id: string;
    result: { judgments: { verdict: 'win' | 'tie' | 'loss' | null }[] };
  }[];
  const score: Record<'win' | 'tie' | 'loss', number> = { win: 1, tie: 0.5, loss: 0 };
  return new Map(
    rows.map((r) => {
      const read = r.result.judgments.flatMap((j) => (j.verdict === null ? [] : [score[j.verdict]]));
      return [r.question_id, { mean: read.reduce((a, b) => a + b, 0) / read.length, n: read.length }];
    }),
  );
}

/** Issue 28 item 4: `svc.same_questions_as` runs exactly an earlier run's questions; the poll reports the paired difference. */
describe('runs: paired re-runs (svc.same_questions_as)', function () {
  this.timeout(300_000);
  const apis = {} as Record<Form, Api>;
  let workers: { stop(): Promise<void> };
  let org: TestOrg;
  let modes: Awaited<ReturnType<typeof demoModes>>;
  /** The earlier run every paired run names: the strong mode, launched through Form B. */
  let earlier: { id: string; billedUsd: number };

  before(async () => {
    workers = await startProductWorkers();
    for (const form of FORMS) apis[form] = await startApi(form, { runs: { testsPerDay: 20, certificationsPerDay: 3, window: 16 } });
    org = await newOrg(100);
    modes = await demoModes(org.orgId);
    const r = await call(apis.B, 'POST', '/v1/tests', {
      key: org.ownerKey,
      body: { model: modes.strong.B, questions: { easy: 3, medium: 3, hard: 3 } },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const v = LaunchSchema.parse(r.body);
    earlier = { id: v.batch_id ?? '', billedUsd: v.billed_usd ?? -1 };
    assert.ok(earlier.billedUsd > 0, 'a live run is billed');
    assert.equal(TestPollSchema.parse((await untilEnded(apis.B, org.ownerKey, 'tests', earlier.id)).body).batch.state, 'completed');
  });
  after(async () => {
    for (const form of FORMS) await apis[form].close();
    await workers.stop();
  });

  it('runs exactly the earlier run’s questions in both Forms, billed like any run, and the poll reports the paired difference', async () => {
    // A paired dry run prices the earlier run's questions: on the same mode and Form, what that run cost.
    const dry = {} as Record<Form, number>;
    for (const form of FORMS) {
      const r = await call(apis[form], 'POST', '/v1/tests', {
        key: org.ownerKey,
        body: { model: modes.strong[form], svc: { same_questions_as: earlier.id }, dry_run: true },
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const priced = LaunchSchema.parse(r.body);
      assert.equal(priced.total_questions, 9);
      assert.deepEqual(priced.per_bucket, form === 'A' ? { light: 3, medium: 3, hard: 3 } : { easy: 3, medium: 3, hard: 3 });
      dry[form] = priced.total_cost_usd ?? -1;
    }
    assert.equal(dry.B, earlier.billedUsd, 'the same questions on the same mode cost the same');

    // Two paired runs at once: the same mode again (Form A), and the weak mode (Form B).
    const [again, weak] = await Promise.all([
      call(apis.A, 'POST', '/v1/tests', { key: org.ownerKey, body: { model: modes.strong.A, svc: { same_questions_as: earlier.id } } }),
      call(apis.B, 'POST', '/v1/tests', { key: org.ownerKey, body: { model: modes.weak.B, svc: { same_questions_as: earlier.id } } }),
    ]);
    for (const r of [again, weak]) assert.equal(r.status, 200, JSON.stringify(r.body));
    const againRun = LaunchSchema.parse(again.body);
    const weakRun = LaunchSchema.parse(weak.body);
    assert.equal(againRun.billed_usd, dry.A, 'billed as its dry run priced it');
    assert.ok((weakRun.billed_usd ?? 0) > 0);
    assert.equal(weakRun.total_questions, 9);

    const [againPoll, weakPoll, earlierPoll] = await Promise.all([
      untilEnded(apis.A, org.ownerKey, 'tests', againRun.batch_id ?? ''),
      untilEnded(apis.B, org.ownerKey, 'tests', weakRun.batch_id ?? ''),
      call(apis.B, 'GET', `/v1/tests?batch_id=${earlier.id}`, { key: org.ownerKey }),
    ]);
    const before = TestPollSchema.parse(earlierPoll.body);
    assert.equal(before.svc, undefined, 'a run that named no other run has no paired difference');

    const asked = await questionsOf(earlier.id);
    assert.equal(asked.size, 9);
    for (const [form, r] of [
      ['A', againPoll],
      ['B', weakPoll],
    ] as const) {
      const p = TestPollSchema.parse(r.body);
      assert.equal(p.batch.state, 'completed', `${form}: ${JSON.stringify(p.batch)}`);
      // The same question ids, each with the same template and reference answer: the same questions.
      assert.deepEqual(await questionsOf(p.batch.id), asked, form);
      const paired = p.svc?.paired;
      assert.ok(paired, `${form}: ${JSON.stringify(p)}`);
      assert.equal(paired.against, earlier.id);
      assert.equal(paired.pairs, 9);
      assert.equal(paired.degrees_of_freedom, 8, 'nine questions, clustered by question');
      // Every question judged in both runs, so the paired difference is the difference of the two runs' win rates.
      const expected = (p.batch.results?.overall.win_rate ?? NaN) - (before.batch.results?.overall.win_rate ?? NaN);
      assert.ok(Math.abs((paired.difference ?? NaN) - expected) <= 2e-4, `${form}: ${paired.difference} vs ${expected}`);
      // Issue 38 item 6, from the rows: with as many readable verdicts per question in both runs, the clustered
      // residuals are all zero exactly when every question's mean score moved by the same amount. Then there is no
      // spread to measure, and no interval is given (with the reason); otherwise a 95% interval of positive width.
      const [now, then] = [await meanScores(p.batch.id), await meanScores(earlier.id)];
      const diffs = [...now].map(([q, s]) => {
        const b = then.get(q);
        assert.ok(b && b.n === s.n, `${form}: ${q} read ${s.n} verdicts now, ${b?.n} before`);
        return s.mean - b.mean;
      });
      const noSpread = diffs.every((d) => Math.abs(d - diffs[0]) < 1e-9);
      if (noSpread) {
        assert.deepEqual([paired.ci_low, paired.ci_high, paired.standard_error], [null, null, null], JSON.stringify(paired));
        assert.match(paired.no_interval_reason ?? '', /same amount/, JSON.stringify(paired));
      } else {
        assert.ok(paired.ci_low !== null && paired.ci_high !== null, JSON.stringify(paired));
        assert.ok(paired.ci_low <= paired.difference! && paired.difference! <= paired.ci_high, JSON.stringify(paired));
        assert.ok(paired.ci_high - paired.ci_low > 0 && (paired.standard_error ?? 0) > 0, JSON.stringify(paired));
        assert.equal(paired.no_interval_reason, null);
      }
    }
  });

  it('MCP run_test takes svc.same_questions_as in both Forms (official MCP SDK client): the same questions, the same codes', async () => {
    const test = await newKey(org.orgId, { keyKind: 'test' });
    for (const form of FORMS) {
      const client = await connect(apis[form], test);
      // Advertised, so an agent knows it can ask for a paired re-run.
      const tool = (await client.listTools()).tools.find((t) => t.name === 'run_test');
      const svc = tool?.inputSchema.properties?.svc as { properties?: Record<string, unknown> } | undefined;
      assert.ok(svc?.properties?.same_questions_as, JSON.stringify(tool?.inputSchema));
      const launched = json(
        await client.callTool({ name: 'run_test', arguments: { model: modes.weak[form], svc: { same_questions_as: earlier.id } } }),
      );
      const id = String(launched.batch_id);
      assert.equal(launched.total_questions, 9, JSON.stringify(launched));
      const p = TestPollSchema.parse((await untilEnded(apis[form], test, 'tests', id)).body);
      assert.deepEqual(await questionsOf(id), await questionsOf(earlier.id), form);
      assert.equal(p.svc?.paired.against, earlier.id);
      assert.equal(p.svc?.paired.pairs, 9);
      const missing = json(
        await client.callTool({ name: 'run_test', arguments: { model: modes.weak[form], svc: { same_questions_as: randomUUID() } } }),
      );
      assert.equal((missing.error as { code: string }).code, form === 'A' ? 'not_found' : 'batch_not_found');
      assert.equal(missing.http_status, 404);
      await client.close();
    }
  });

  it('refuses a run the organisation does not have (404, the poll’s code) and conflicting question options (400), in both Forms', async () => {
    const other = await newOrg(20);
    const otherModes = await demoModes(other.orgId);
    const refuses = async (form: Form, who: TestOrg, body: Record<string, unknown>, status: number, code: string, path = '/v1/tests') => {
      const money = await moneySnapshot(who.orgId);
      const r = await call(apis[form], 'POST', path, { key: who.ownerKey, body });
      assert.equal(r.status, status, `${form} ${JSON.stringify(body)} → ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error?.code, code, `${form} ${JSON.stringify(body)}`);
      assert.equal(await moneySnapshot(who.orgId), money, 'a refused launch changes nothing');
      return r.body.error?.message ?? '';
    };
    const notFound = { A: 'not_found', B: 'batch_not_found' } as const;
    for (const form of FORMS) {
      const model = form === 'A' ? modes.strong.A : modes.strong.B;
      for (const id of [randomUUID(), 'not-a-run']) {
        const error = await refuses(form, org, { model, svc: { same_questions_as: id } }, 404, notFound[form]);
        assert.match(error, /in this organisation/);
      }
      // Another organisation's run is not found, exactly like one that never existed.
      const theirs = form === 'A' ? otherModes.strong.A : otherModes.strong.B;
      await refuses(form, other, { model: theirs, svc: { same_questions_as: earlier.id } }, 404, notFound[form]);
      await refuses(form, org, { model, svc: { same_questions_as: 42 } }, 400, 'invalid_request');

      const own = form === 'A' ? { buckets: { light: 1 } } : { questions: { easy: 1 } };
      const conflicts: [Record<string, unknown>, string][] = [
        [{ model, ...own, svc: { same_questions_as: earlier.id } }, form === 'A' ? 'buckets' : 'questions'],
        [{ model, svc: { same_questions_as: earlier.id, question_set: 'qs_abc' } }, 'svc.question_set'],
      ];
      if (form === 'B') conflicts.push([{ model, buckets: { light: 1 }, svc: { same_questions_as: earlier.id } }, 'buckets']);
      for (const [body, param] of conflicts) {
        const r = await call(apis[form], 'POST', '/v1/tests', { key: org.ownerKey, body });
        assert.equal(r.status, 400, `${form} ${JSON.stringify(body)} → ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error?.code, 'invalid_request');
        assert.equal(r.body.error?.param, param);
        assert.ok(
          r.body.error?.message.includes('`svc.same_questions_as`') && r.body.error.message.includes(`\`${param}\``),
          `the message names both: ${r.body.error?.message}`,
        );
      }
      // A run whose questions the seed no longer draws (a release changed the generator; here its row says so).
      const row = (await stack().db('run_questions').where({ run_id: earlier.id }).first('question_id', 'result')) as {
        question_id: string;
        result: Record<string, unknown>;
      };
      const where = { run_id: earlier.id, question_id: row.question_id };
      await stack()
        .db('run_questions')
        .where(where)
        .update({ result: JSON.stringify({ ...row.result, reference: 'another answer' }) });
      try {
        const drifted = await refuses(form, org, { model, svc: { same_questions_as: earlier.id } }, 400, 'invalid_request');
        assert.match(drifted, /can no longer be drawn/);
      } finally {
        await stack()
          .db('run_questions')
          .where(where)
          .update({ result: JSON.stringify(row.result) });
      }
      // A certification draws fresh questions.
      const cert = await refuses(form, org, { model, svc: { same_questions_as: earlier.id } }, 400, 'invalid_request', '/v1/certify');
      assert.match(cert, /fresh questions/);
    }
  });
});
