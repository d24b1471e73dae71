import assert from 'node:assert/strict';
import { getRun } from '../../../db/repositories/runs';
import { workflowIds } from '../../../domain/workflow-ids';
import { CertifyPollSchema, LaunchSchema, TestPollSchema } from '../../../api/v1/run-resources';
import { cancelRun } from '../../../starters/runs';
import { call, newKey, newOrg, startApi, USER, type Api } from '../api/helpers';
import { recordHistory, requestLedger, startProductWorkers } from '../deliberation/helpers';
import { stack } from '../../harness/stack';
import { demoModes, unjudgedPrices, untilEnded } from './helpers';

describe('runs: test runs and certification on the real stack', function () {
  this.timeout(300_000);
  let workers: { stop(): Promise<void> };
  let b: Api;
  let a: Api;
  before(async () => {
    workers = await startProductWorkers();
    b = await startApi('B', { runs: { testsPerDay: 20, certificationsPerDay: 3, window: 16 } });
    a = await startApi('A', { runs: { testsPerDay: 20, certificationsPerDay: 3, window: 16 } });
  });
  after(async () => {
    await a.close();
    await b.close();
    await workers.stop();
  });

  it('certifies the strong simulated mode and not the weak one, each with its interval, each charged $50 once', async () => {
    const org = await newOrg(150);
    const modes = await demoModes(org.orgId);
    // The strong mode through Form B, the weak one through Form A: one domain, two presentations.
    const [strong, weak] = await Promise.all([
      call(b, 'POST', '/v1/certify', { key: org.ownerKey, body: { model: modes.strong.B } }),
      call(a, 'POST', '/v1/certify', { key: org.ownerKey, body: { model: modes.weak.A } }),
    ]);
    for (const r of [strong, weak]) {
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const v = LaunchSchema.parse(r.body);
      assert.equal(v.total_questions, 150);
      assert.equal(v.billed_usd, 50);
      assert.equal(v.status_url, `${r === strong ? b.url : a.url}/v1/certify?batch_id=${v.batch_id}`);
    }
    const [s, w] = await Promise.all([
      untilEnded(b, org.ownerKey, 'certify', strong.body.batch_id as string),
      untilEnded(a, org.ownerKey, 'certify', weak.body.batch_id as string),
    ]);
    const sp = CertifyPollSchema.parse(s.body);
    const wp = CertifyPollSchema.parse(w.body);
    assert.equal(sp.batch.state, 'completed');
    assert.equal(sp.certification?.verdict, 'certified', JSON.stringify(sp.certification));
    assert.equal(wp.certification?.verdict, 'not_certified', JSON.stringify(wp.certification));
    for (const p of [sp, wp]) {
      const c = p.certification;
      assert.ok(c?.interval && c.win_rate !== null && c.lower_bound === c.interval.low);
      assert.ok(c.interval.low < c.win_rate && c.win_rate < c.interval.high);
      assert.equal(c.clusters, 150);
      assert.equal(c.judgments, 900, 'three judges, two repeats, 150 questions');
      assert.equal(c.degrees_of_freedom, 149);
      assert.equal(p.batch.progress.done, 150);
      assert.deepEqual(
        Object.keys(p.batch.results?.per_bucket ?? {}).sort(),
        p === sp ? ['easy', 'hard', 'medium'] : ['hard', 'light', 'medium'],
      );
    }
    assert.ok(sp.certification && sp.certification.mode_accuracy > sp.certification.baseline_accuracy);
    assert.ok(wp.certification && wp.certification.mode_accuracy < wp.certification.baseline_accuracy);
    for (const id of [sp.batch.id, wp.batch.id])
      assert.deepEqual(
        await requestLedger(org.orgId, id),
        [{ kind: 'test_run_charge', amount: -50_000_000n }],
        'charged once, up front, nothing back',
      );

    const run = await getRun(stack().db, sp.batch.id);
    const question = (await stack().db('run_questions').where({ run_id: run.id }).first('question_id')) as { question_id: string };
    await recordHistory('certification-question', workflowIds.question(run.workflowId, question.question_id));
  });

  it('a test run shows its progress while it runs, continues as new past its history limit, and then grounds the estimate', async () => {
    const slow = await startApi('B', { runs: { testsPerDay: 20, certificationsPerDay: 3, window: 2, historyLimit: 60 } });
    try {
      const org = await newOrg(50);
      const modes = await demoModes(org.orgId);
      const launched = await call(slow, 'POST', '/v1/tests', {
        key: org.ownerKey,
        body: { model: modes.strong.B, questions: { easy: 8, medium: 8, hard: 8 }, judge_repeats: 2 },
      });
      assert.equal(launched.status, 200, JSON.stringify(launched.body));
      const id = launched.body.batch_id as string;
      // A poller of its own, so the owner key's requests per minute are left for the rest.
      const poller = await newKey(org.orgId, { scopes: ['tests'] });
      const seen: { state: string; done: number; left: number }[] = [];
      for (let i = 0; i < 50; i++) {
        const r = await call(slow, 'GET', `/v1/tests?batch_id=${id}`, { key: poller });
        const p = TestPollSchema.parse(r.body);
        seen.push({ state: p.batch.state, done: p.batch.progress.done, left: p.batch.estimated_seconds_left });
        if (p.batch.state === 'completed') break;
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      const midway = seen.filter((s) => s.state === 'running' && s.done > 0 && s.done < 24);
      assert.ok(midway.length > 0, `progress seen while running: ${JSON.stringify(seen)}`);
      assert.ok(midway.every((s) => s.left > 0));
      const done = TestPollSchema.parse((await untilEnded(slow, org.ownerKey, 'tests', id)).body);
      assert.equal(done.batch.state, 'completed');
      assert.equal(done.batch.progress.done, 24);
      assert.equal(done.batch.results?.overall.questions, 24);
      assert.equal(done.batch.results?.overall.judgments, 24 * 3 * 2, JSON.stringify(done.batch));

      const run = await getRun(stack().db, id);
      const described = await stack().env.client.workflow.getHandle(run.workflowId).describe();
      const firstRunId = described.raw.workflowExecutionInfo?.firstRunId ?? undefined;
      assert.notEqual(described.runId, firstRunId, 'the run continued as new at least once');
      await recordHistory('test-run-continued', run.workflowId, firstRunId);
      await recordHistory('test-run-last', run.workflowId);
      assert.equal(Number((await stack().db('run_questions').where({ run_id: id }).count<{ n: string }[]>('* as n'))[0].n), 24);

      // The estimate now cites the run for the prompt's bucket.
      const est = await call(slow, 'POST', '/v1/estimate', {
        key: org.ownerKey,
        body: {
          model: modes.strong.B,
          messages: USER('Compute 17 * 23 + 4, step by step, and explain each step of the working carefully.'),
        },
      });
      assert.equal(est.status, 200, JSON.stringify(est.body));
      const value = (est.body as { deliberation_value: { basis: string; evidence: string; verdict: string } }).deliberation_value;
      assert.equal(value.basis, 'test_runs');
      assert.match(value.evidence, new RegExp(`run ${id}`));
      assert.match(value.evidence, /n=\d+ .*win rate 0\.\d+ .*95% interval \[0\.\d+, [01]\.\d+\]/);
    } finally {
      await slow.close();
    }
  });

  it('plurality over two tiers with punch_up: each judge picks among the mode and each seat engine alone', async () => {
    const org = await newOrg(50);
    const modes = await demoModes(org.orgId);
    const launched = await call(b, 'POST', '/v1/tests', {
      key: org.ownerKey,
      body: {
        model: modes.strong.B,
        questions: { easy: 2, medium: 2, hard: 2 },
        judging_protocol: 'plurality',
        tiers: ['plus', 'pro'],
        punch_up: true,
      },
    });
    assert.equal(launched.status, 200, JSON.stringify(launched.body));
    const done = TestPollSchema.parse((await untilEnded(b, org.ownerKey, 'tests', launched.body.batch_id as string)).body);
    assert.equal(done.batch.state, 'completed');
    assert.deepEqual(done.batch.judging.tiers, ['plus', 'pro']);
    const rows = (await stack().db('run_questions').where({ run_id: done.batch.id }).select('tier', 'result')) as {
      tier: string;
      result: { baselineEngine: string; judgments: { order: number[] }[] };
    }[];
    assert.deepEqual([...new Set(rows.map((r) => r.tier))].sort(), ['plus', 'pro']);
    // The mode's answer and its three seats' own answers are shown to every judge, in an order of its own.
    assert.ok(rows.every((r) => r.result.judgments.every((j) => [...j.order].sort().join() === '0,1,2,3')));
    // punch_up: the plus tier is measured against the pro tier's strongest engine, and pro (the top) against its own.
    assert.ok(rows.every((r) => r.result.baselineEngine === 'sim/beta-pro'));
    // A judge may not be the maker of any seat it judges in plurality: here each sim engine is its own maker.
    assert.ok(done.batch.recusals.length > 0);
  });

  it('a cancelled run stops, and its unjudged questions’ prices are credited back once', async () => {
    const slow = await startApi('A', { runs: { testsPerDay: 20, certificationsPerDay: 3, window: 1 } });
    try {
      const org = await newOrg(50);
      const modes = await demoModes(org.orgId);
      const launched = await call(slow, 'POST', '/v1/tests', {
        key: org.ownerKey,
        body: { model: modes.weak.A, buckets: { light: 40, medium: 40, hard: 40 } },
      });
      assert.equal(launched.status, 200, JSON.stringify(launched.body));
      const id = launched.body.batch_id as string;
      const billed = BigInt(Math.round((launched.body.billed_usd as number) * 1_000_000));
      for (
        let i = 0;
        i < 200 && Number((await stack().db('run_questions').where({ run_id: id }).count<{ n: string }[]>('* as n'))[0].n) < 2;
        i++
      )
        await new Promise((resolve) => setTimeout(resolve, 100));
      await cancelRun(stack().env.client, await getRun(stack().db, id));
      const ended = TestPollSchema.parse((await untilEnded(slow, org.ownerKey, 'tests', id)).body);
      assert.equal(ended.batch.state, 'cancelled');
      const answered = ended.batch.progress.done;
      assert.ok(answered >= 2 && answered < 120, `answered ${answered}`);
      // Issue 38 item 9: each unjudged question gives back its own price.
      const refund = await unjudgedPrices(id);
      assert.ok(refund > 0n && refund < billed);
      assert.deepEqual(await requestLedger(org.orgId, id), [
        { kind: 'test_run_charge', amount: -billed },
        { kind: 'run_refund', amount: refund },
      ]);
      assert.equal(ended.batch.refunded_usd, Number(refund) / 1_000_000);
      assert.equal(ended.batch.results?.overall.questions, answered);
      await recordHistory('test-run-cancelled', (await getRun(stack().db, id)).workflowId);
    } finally {
      await slow.close();
    }
  });
});
