import type { ChildProcess } from 'node:child_process';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TestPollSchema } from '../../../api/v1/run-resources';
import { call, newOrg, startApi, type Api } from '../api/helpers';
import { requestLedger } from '../deliberation/helpers';
import { stack } from '../../harness/stack';
import { startWorkerProcess, stackProcessEnv } from '../../harness/worker';
import { demoModes, untilEnded } from './helpers';

async function answered(runId: string): Promise<number> {
  return Number((await stack().db('run_questions').where({ run_id: runId }).count<{ n: string }[]>('* as n'))[0].n);
}

describe('runs: the worker dies mid-run', function () {
  this.timeout(240_000);
  let api: Api;
  let dataDir: string;
  const children: ChildProcess[] = [];
  before(async () => {
    // Calls still out after 20 ms (engines take 40) are hedged: duplicates in flight when the worker dies, too.
    api = await startApi('B', { runs: { testsPerDay: 20, certificationsPerDay: 3, window: 3, hedgeAfterMs: 20 } });
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-run-durability-'));
  });
  after(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await api.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('loses no finished question and charges nothing twice', async () => {
    // Slow engines, so the kill lands while questions are in flight.
    const env = stackProcessEnv(dataDir, { QUORUM_SIM_LATENCY: 'fixed:40' });
    const org = await newOrg(50);
    const modes = await demoModes(org.orgId);
    const first = await startWorkerProcess(env);
    children.push(first);
    const launched = await call(api, 'POST', '/v1/tests', {
      key: org.ownerKey,
      body: { model: modes.strong.B, questions: { easy: 10, medium: 10, hard: 10 } },
    });
    assert.equal(launched.status, 200, JSON.stringify(launched.body));
    const id = launched.body.batch_id as string;
    const deadline = Date.now() + 60_000;
    while ((await answered(id)) < 6) {
      if (Date.now() > deadline) throw new Error('the run made no progress');
      await new Promise((r) => setTimeout(r, 50));
    }
    first.kill('SIGKILL');
    await new Promise((r) => first.once('exit', r));
    const before = await stack().db('run_questions').where({ run_id: id }).select('question_id', 'completed_at');

    const second = await startWorkerProcess(env);
    children.push(second);
    const done = TestPollSchema.parse((await untilEnded(api, org.ownerKey, 'tests', id, 200_000)).body);
    second.kill('SIGTERM');

    assert.equal(done.batch.state, 'completed');
    assert.equal(done.batch.progress.done, 30);
    assert.equal(done.batch.results?.overall.questions, 30);
    // Every question answered before the kill is still there, untouched; none was answered twice.
    const after = await stack().db('run_questions').where({ run_id: id }).select('question_id', 'completed_at');
    assert.equal(after.length, 30);
    for (const row of before)
      assert.deepEqual(
        after.find((r) => r.question_id === row.question_id),
        row,
      );
    assert.deepEqual(
      (await requestLedger(org.orgId, id)).map((e) => e.kind),
      ['test_run_charge'],
      'one charge, up front; nothing refunded, nothing charged again',
    );
  });
});
