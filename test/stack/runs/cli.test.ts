import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { call, newOrg, startApi, type Api } from '../api/helpers';
import { startProductWorkers } from '../deliberation/helpers';
import { quorumCli } from '../../harness/cli';
import { getRun } from '../../../db/repositories/runs';
import { stack } from '../../harness/stack';
import { demoModes } from './helpers';

describe('runs: the operator CLI (questions import, run watch / list / cancel)', function () {
  this.timeout(180_000);
  let dataDir: string;
  let api: Api;
  let workers: { stop(): Promise<void> };
  const temporal = (): Record<string, string> => ({
    TEMPORAL_ADDRESS: stack().env.connection.options.address,
    TEMPORAL_NAMESPACE: stack().namespace,
  });

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-run-cli-'));
    workers = await startProductWorkers();
    api = await startApi('B', { runs: { testsPerDay: 20, certificationsPerDay: 3, window: 4 } });
  });
  after(async () => {
    await api.close();
    await workers.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('imports a question set all or nothing, naming every bad line; a run on it is watched to its end and listed', async () => {
    const org = await newOrg(20);
    const modes = await demoModes(org.orgId);
    const bad = path.join(dataDir, 'bad.jsonl');
    fs.writeFileSync(
      bad,
      [
        JSON.stringify({ id: 'q1', question: 'What is 6 times 7?', answer: '42', difficulty: 'easy', cluster: 'times' }),
        'not json',
        JSON.stringify({ id: 'q1', question: 'Again?', answer: '1', difficulty: 'hard', cluster: 'x' }),
        JSON.stringify({ id: 'q3', question: 'What?', answer: '2', difficulty: 'extreme', cluster: 'x' }),
      ].join('\n'),
    );
    const refused = await quorumCli(['questions', 'import', bad, '--org', org.orgId], dataDir);
    assert.equal(refused.code, 1);
    for (const line of [2, 3, 4]) assert.match(refused.stderr, new RegExp(`line ${line}: `));
    assert.match(refused.stderr, /nothing imported/);
    assert.equal((await stack().db('question_sets').where({ org_id: org.orgId })).length, 0);

    const good = path.join(dataDir, 'good.jsonl');
    const lines = ['light', 'medium', 'hard'].flatMap((difficulty, d) =>
      Array.from({ length: 3 }, (_, i) =>
        JSON.stringify({
          id: `${difficulty}-${i}`,
          question: `What is ${d * 10 + i} plus ${i + 5}?`,
          answer: String(d * 10 + i + i + 5),
          difficulty,
          cluster: `sum-${d}`,
        }),
      ),
    );
    fs.writeFileSync(good, lines.join('\n') + '\n');
    const imported = await quorumCli(['questions', 'import', good, '--org', org.orgId, '--json'], dataDir);
    assert.equal(imported.code, 0, imported.stderr);
    const set = JSON.parse(imported.stdout) as { question_set: string; questions: number; per_bucket: Record<string, number> };
    assert.equal(set.questions, 9);
    assert.deepEqual(set.per_bucket, { light: 3, medium: 3, hard: 3 });

    // More questions of a difficulty than the set holds is refused before anything is charged.
    const tooMany = await call(api, 'POST', '/v1/tests', {
      key: org.ownerKey,
      body: { model: modes.strong.B, questions: { easy: 4 }, svc: { question_set: set.question_set } },
    });
    assert.equal(tooMany.status, 400);
    assert.equal(tooMany.body.error?.param, 'svc.question_set');

    const launched = await call(api, 'POST', '/v1/tests', {
      key: org.ownerKey,
      body: { model: modes.strong.B, questions: { easy: 2, medium: 2, hard: 2 }, svc: { question_set: set.question_set } },
    });
    assert.equal(launched.status, 200, JSON.stringify(launched.body));
    const id = launched.body.batch_id as string;

    const watched = await quorumCli(['run', 'watch', id, '--every', '0.3'], dataDir, temporal());
    assert.equal(watched.code, 0, watched.stderr);
    assert.match(watched.stdout, new RegExp(`Run ${id} completed: win rate 0\\.\\d+, 95% interval \\[`));
    // The bars go to stderr: the run, then each bucket, filled to its total.
    assert.match(watched.stderr, /all +\|.*\| 6\/6/);
    for (const bucket of ['light', 'medium', 'hard']) assert.match(watched.stderr, new RegExp(`${bucket} +\\|.*\\| 2/2`));
    const rows = (await stack().db('run_questions').where({ run_id: id }).select('question_id')) as { question_id: string }[];
    assert.ok(
      rows.every((r) => /^(light|medium|hard)-[0-2]$/.test(r.question_id)),
      'the run asked the imported questions',
    );

    const listed = await quorumCli(['run', 'list', '--org', org.orgId, '--json'], dataDir);
    const runs = (JSON.parse(listed.stdout) as { runs: { batch_id: string; state: string }[] }).runs;
    assert.deepEqual(
      runs.map((r) => [r.batch_id, r.state]),
      [[id, 'completed']],
    );
    const cancel = await quorumCli(['run', 'cancel', id], dataDir, temporal());
    assert.equal(cancel.code, 0);
    assert.match(cancel.stdout, /already ended completed/);
  });

  it('run cancel stops a live run; run watch then reports it cancelled with the refund', async () => {
    const org = await newOrg(20);
    const modes = await demoModes(org.orgId);
    const slow = await startApi('B', { runs: { testsPerDay: 20, certificationsPerDay: 3, window: 1 } });
    try {
      const launched = await call(slow, 'POST', '/v1/tests', {
        key: org.ownerKey,
        body: { model: modes.weak.B, questions: { easy: 100, medium: 100, hard: 100 } },
      });
      const id = launched.body.batch_id as string;
      const cancel = await quorumCli(['run', 'cancel', id, '--json'], dataDir, temporal());
      assert.equal(cancel.code, 0, cancel.stderr);
      // The API's cancel (operations/run-cancel.ts): it waits for the run to stop, then says what was credited back.
      const row = await getRun(stack().db, id);
      assert.equal(row.state, 'cancelled');
      assert.deepEqual(JSON.parse(cancel.stdout), { batch_id: id, state: 'cancelled', refunded_usd: row.refundedMicros / 1_000_000 });
      const watched = await quorumCli(['run', 'watch', id, '--every', '0.3', '--json'], dataDir, temporal());
      const out = JSON.parse(watched.stdout) as { state: string; progress: { done: Record<string, number> } };
      assert.equal(out.state, 'cancelled');
      const bad = await quorumCli(['run', 'watch', 'not-a-batch'], dataDir);
      assert.equal(bad.code, 2);
    } finally {
      await slow.close();
    }
  });
});
