import assert from 'node:assert/strict';
import { CertifyPollSchema, RunQuestionSchema, TestPollSchema } from '../../../api/v1/run-resources';
import { getRun } from '../../../db/repositories/runs';
import type { Form } from '../../../domain/form';
import { generateQuestions } from '../../../domain/questions/generate';
import type { Bucket } from '../../../domain/questions/types';
import type { QuestionResult } from '../../../domain/runs';
import { call, FORMS, newKey, newOrg, startApi, type Api } from '../api/helpers';
import { startProductWorkers } from '../deliberation/helpers';
import { stack } from '../../harness/stack';
import { demoModes, untilEnded } from './helpers';

/**
 * Issue 28 item 3: a run's per-question results through the real stack, in both Forms. Every served field is checked
 * against the question rows the run's workflows stored (what the record is for), the question text against the
 * generator the run drew it from, and paging, the transcript opt-in and the JSONL export against each other.
 */

type QuestionRecord = ReturnType<typeof RunQuestionSchema.parse>;

const BUCKET_NAME: Readonly<Record<Form, Readonly<Record<Bucket, string>>>> = {
  A: { light: 'light', medium: 'medium', hard: 'hard' },
  B: { light: 'easy', medium: 'medium', hard: 'hard' },
};

async function storedRows(runId: string): Promise<QuestionResult[]> {
  const rows = (await stack().db('run_questions').where({ run_id: runId }).orderBy(['completed_at', 'question_id']).select('result')) as {
    result: QuestionResult;
  }[];
  return rows.map((r) => r.result);
}

async function page(api: Api, key: string, query: string): Promise<{ records: QuestionRecord[]; hasMore: boolean; lastId: string | null }> {
  const r = await call(api, 'GET', `/v1/tests?${query}`, { key });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const q = TestPollSchema.parse(r.body).questions;
  assert.ok(q, `include=questions returns a questions list: ${JSON.stringify(r.body)}`);
  return { records: q.data, hasMore: q.has_more, lastId: q.last_id };
}

async function jsonl(api: Api, key: string, path: string): Promise<{ status: number; type: string | null; records: unknown[] }> {
  const res = await fetch(api.url + path, { headers: { authorization: `Bearer ${key}` } });
  const text = await res.text();
  const lines = text.split('\n');
  assert.equal(lines.pop(), '', 'every line ends with a newline');
  return { status: res.status, type: res.headers.get('content-type'), records: lines.map((l) => JSON.parse(l) as unknown) };
}

describe('runs: per-question results (include=questions, format=jsonl)', function () {
  this.timeout(300_000);
  let workers: { stop(): Promise<void> };
  const apis = {} as Record<Form, Api>;
  before(async () => {
    workers = await startProductWorkers();
    for (const form of FORMS) apis[form] = await startApi(form, { runs: { testsPerDay: 20, certificationsPerDay: 3, window: 16 } });
  });
  after(async () => {
    for (const form of FORMS) await apis[form].close();
    await workers.stop();
  });

  for (const form of FORMS) {
    it(`Form ${form}: every question with its answers, judgments, correctness, cost and latency; paged, with texts on request, and as JSONL`, async () => {
      const api = apis[form];
      const org = await newOrg(50);
      const modes = await demoModes(org.orgId);
      const counts = form === 'A' ? { buckets: { light: 2, medium: 1, hard: 1 } } : { questions: { easy: 2, medium: 1, hard: 1 } };
      const launched = await call(api, 'POST', '/v1/tests', {
        key: org.ownerKey,
        body: { model: modes.strong[form], ...counts, judges: ['judge_a', 'judge_b'], judge_repeats: 2 },
      });
      assert.equal(launched.status, 200, JSON.stringify(launched.body));
      const id = launched.body.batch_id as string;
      const ended = TestPollSchema.parse((await untilEnded(api, org.ownerKey, 'tests', id)).body);
      assert.equal(ended.batch.state, 'completed');
      assert.equal(ended.questions, undefined, 'the poll alone lists no questions');
      // A key of its own, so the requests below keep under one key's requests per minute.
      const key = await newKey(org.orgId, { scopes: ['tests'] });

      const stored = await storedRows(id);
      assert.equal(stored.length, 4);
      const run = await getRun(stack().db, id);
      const drawn = new Map(generateQuestions(run.spec.seed, run.spec.counts).map((q) => [q.id, q]));

      const all = await page(api, key, `batch_id=${id}&include=questions`);
      assert.equal(all.hasMore, false);
      assert.deepEqual(
        all.records.map((r) => r.id),
        stored.map((s) => s.questionId),
        'every question, in the order recorded',
      );
      for (const [i, rec] of all.records.entries()) {
        const s = stored[i];
        assert.equal(rec.bucket, BUCKET_NAME[form][s.bucket]);
        assert.equal(rec.cluster, s.cluster);
        assert.equal(rec.tier, s.tier);
        assert.equal(rec.sealed, false, 'the run has ended: nothing is withheld');
        assert.equal(s.question, drawn.get(s.questionId)?.question, 'the question is stored with its result');
        assert.equal(rec.question, s.question);
        assert.equal(rec.reference_answer, drawn.get(s.questionId)?.answer);
        assert.equal(rec.reference_answer, s.reference);
        // Texts only on request; their lengths always.
        assert.equal(rec.mode_answer, null);
        assert.equal(rec.baseline_answer, null);
        assert.equal(rec.mode_answer_chars, s.modeAnswer.length);
        assert.ok(rec.mode_answer_chars > 0);
        assert.equal(rec.baseline_answer_chars, s.baselineAnswer.length);
        assert.equal(rec.baseline_engine, s.baselineEngine);
        assert.equal(rec.mode_correct, s.modeCorrect);
        assert.equal(rec.baseline_correct, s.baselineCorrect);
        assert.equal(rec.cost_usd, s.costMicros / 1_000_000);
        assert.ok(rec.cost_usd > 0, 'the engines cost something (sim engines are priced)');
        assert.equal(rec.latency_ms, s.latencyMs);
        assert.ok(rec.latency_ms > 0);
        // The equal-cost arms' figures as recorded (issue 39 item 2), their texts withheld like the others.
        assert.deepEqual(
          [rec.costs?.mode_usd, rec.costs?.baseline_usd, rec.arms?.samples, rec.arms?.self_moa?.correct, rec.arms?.self_moa?.answer],
          [(s.costs?.modeMicros ?? NaN) / 1e6, (s.costs?.baselineMicros ?? NaN) / 1e6, s.arms?.samples, s.arms?.selfMoa?.correct, null],
        );
        // Two judges × two repeats, each with the order it saw: a permutation of the two answers.
        assert.equal(rec.judgments.length, 2 * 2);
        assert.deepEqual(rec.judgments.map((j) => `${j.judge}/${j.repeat}`).sort(), ['judge_a/1', 'judge_a/2', 'judge_b/1', 'judge_b/2']);
        for (const j of rec.judgments) assert.deepEqual([...j.order].sort(), [0, 1]);
        assert.deepEqual(
          rec.judgments.map((j) => ({ slot: j.judge, engineId: j.engine, repeat: j.repeat, order: j.order, verdict: j.verdict })),
          s.judgments,
        );
        assert.deepEqual(
          rec.recusals,
          s.recusals.map((x) => ({ slot: x.slot, engine: x.engineId, replaced_by: x.replacedBy })),
        );
      }
      assert.ok(
        all.records.some((r) => r.judgments.some((j) => j.verdict !== null)),
        'verdicts were read',
      );

      // Paged one at a time: each question exactly once, in the same order.
      const ids: string[] = [];
      let after: string | null = null;
      for (let n = 0; n < 10; n++) {
        const p = await page(api, key, `batch_id=${id}&include=questions&limit=1${after ? `&after=${after}` : ''}`);
        assert.equal(p.records.length, 1);
        ids.push(p.records[0].id);
        assert.equal(p.lastId, p.records[0].id);
        assert.deepEqual(p.records[0], all.records[ids.length - 1]);
        after = p.lastId;
        if (!p.hasMore) break;
      }
      assert.deepEqual(
        ids,
        all.records.map((r) => r.id),
      );
      const tail = await page(api, key, `batch_id=${id}&include=questions&limit=3&after=${all.records[1].id}`);
      assert.deepEqual(
        tail.records.map((r) => r.id),
        all.records.slice(2).map((r) => r.id),
      );
      assert.equal(tail.hasMore, false);

      // include_transcript adds the texts, and nothing else changes.
      const texts = await page(api, key, `batch_id=${id}&include=questions&include_transcript=true`);
      for (const [i, rec] of texts.records.entries()) {
        assert.equal(rec.mode_answer, stored[i].modeAnswer);
        assert.equal(rec.baseline_answer, stored[i].baselineAnswer);
        // The equal-cost arms' answers are texts too (issue 39 item 2).
        const arms = rec.arms && {
          ...rec.arms,
          self_moa: rec.arms.self_moa && { ...rec.arms.self_moa, answer: null },
          majority_vote: rec.arms.majority_vote && { ...rec.arms.majority_vote, answer: null },
        };
        assert.equal(rec.arms?.self_moa?.answer, stored[i].arms?.selfMoa?.answer);
        assert.deepEqual({ ...rec, mode_answer: null, baseline_answer: null, arms }, all.records[i]);
      }

      // The export: every question, one JSON object a line, the same records.
      const lines = await jsonl(api, key, `/v1/tests?batch_id=${id}&format=jsonl`);
      assert.equal(lines.status, 200);
      assert.match(lines.type ?? '', /^application\/x-ndjson/);
      assert.deepEqual(lines.records, all.records);
      assert.deepEqual((await jsonl(api, key, `/v1/tests?batch_id=${id}&format=jsonl&include_transcript=true`)).records, texts.records);

      // A row written before question texts were stored is served its text derived from the run's seed; one whose
      // reference answer the derivation no longer gives is served none rather than a guess.
      const [older, changed] = stored.map((s) => s.questionId);
      await stack().db.raw("update run_questions set result = result - 'question' where run_id = ? and question_id = ?", [id, older]);
      await stack().db.raw(
        `update run_questions set result = (result - 'question') || '{"reference": "not what was drawn"}' where run_id = ? and question_id = ?`,
        [id, changed],
      );
      const derived = await page(api, key, `batch_id=${id}&include=questions`);
      assert.equal(derived.records[0].question, all.records[0].question);
      assert.equal(derived.records[1].question, null);
      assert.deepEqual(derived.records.slice(2), all.records.slice(2));

      // Bad parameters: a 400 naming each.
      const bad: [string, string][] = [
        ['include=answers', 'include'],
        ['include=questions&include=questions', 'include'],
        ['format=csv', 'format'],
        ['include=questions&limit=0', 'limit'],
        ['include=questions&limit=101', 'limit'],
        ['include=questions&limit=ten', 'limit'],
        ['include=questions&after=no%20such%20id', 'after'],
        ['include=questions&after=hard-9999-arithmetic', 'after'],
        ['include=questions&include_transcript=maybe', 'include_transcript'],
        ['limit=2', 'limit'],
        ['include_transcript=true', 'include_transcript'],
        ['format=jsonl&limit=2', 'limit'],
        ['format=jsonl&after=x', 'after'],
      ];
      for (const [query, param] of bad) {
        const r = await call(api, 'GET', `/v1/tests?batch_id=${id}&${query}`, { key });
        assert.equal(r.status, 400, `${query}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error?.code, 'invalid_request', query);
        assert.equal(r.body.error?.param, param, query);
      }

      // Another organisation's run is not found, paged or exported; and a test run is not a certification.
      const other = await newOrg(1);
      const notFound = form === 'B' ? 'batch_not_found' : 'not_found';
      for (const path of [`/v1/tests?batch_id=${id}&include=questions`, `/v1/tests?batch_id=${id}&format=jsonl`]) {
        const r = await call(api, 'GET', path, { key: other.ownerKey });
        assert.equal(r.status, 404, path);
        assert.equal(r.body.error?.code, notFound);
      }
      const wrongKind = await call(api, 'GET', `/v1/certify?batch_id=${id}&format=jsonl`, { key: org.ownerKey });
      assert.equal(wrongKind.status, 404);
    });
  }

  it('a live run lists the questions done so far, each whole', async () => {
    const slow = await startApi('A', { runs: { testsPerDay: 20, certificationsPerDay: 3, window: 1 } });
    try {
      const org = await newOrg(50);
      const modes = await demoModes(org.orgId);
      const launched = await call(slow, 'POST', '/v1/tests', {
        key: org.ownerKey,
        body: { model: modes.strong.A, buckets: { light: 3, medium: 2, hard: 1 }, judges: ['judge_a'] },
      });
      assert.equal(launched.status, 200, JSON.stringify(launched.body));
      const id = launched.body.batch_id as string;
      const key = await newKey(org.orgId, { scopes: ['tests'] });
      const seen: { state: string; listed: number }[] = [];
      for (let i = 0; i < 55; i++) {
        const r = await call(slow, 'GET', `/v1/tests?batch_id=${id}&include=questions`, { key });
        const p = TestPollSchema.parse(r.body);
        seen.push({ state: p.batch.state, listed: p.questions?.data.length ?? -1 });
        for (const rec of p.questions?.data ?? []) {
          assert.equal(rec.judgments.length, 1);
          // Issue 38 item 1: a live run's rows are sealed; its questions and reference answers show once it has ended.
          if (p.batch.state !== 'completed')
            assert.deepEqual([rec.sealed, rec.question, rec.reference_answer, rec.mode_answer], [true, null, null, null]);
        }
        if (p.batch.state === 'completed') break;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      assert.ok(
        seen.some((s) => s.state === 'running' && s.listed > 0 && s.listed < 6),
        `questions listed while running: ${JSON.stringify(seen)}`,
      );
      const done = TestPollSchema.parse((await untilEnded(slow, org.ownerKey, 'tests', id)).body);
      assert.equal(done.batch.state, 'completed');
      const ended = (await page(slow, key, `batch_id=${id}&include=questions`)).records;
      assert.equal(ended.length, 6);
      for (const rec of ended) assert.ok(!rec.sealed && rec.question && rec.reference_answer, 'shown once the run has ended');
    } finally {
      await slow.close();
    }
  });

  it('a certification lists its 150 questions in two pages (Form B)', async () => {
    const org = await newOrg(150);
    const modes = await demoModes(org.orgId);
    const launched = await call(apis.B, 'POST', '/v1/certify', { key: org.ownerKey, body: { model: modes.strong.B } });
    assert.equal(launched.status, 200, JSON.stringify(launched.body));
    const id = launched.body.batch_id as string;
    await untilEnded(apis.B, org.ownerKey, 'certify', id);
    const key = await newKey(org.orgId, { scopes: ['certify'] });
    const first = await call(apis.B, 'GET', `/v1/certify?batch_id=${id}&include=questions&limit=100`, { key });
    const p1 = CertifyPollSchema.parse(first.body);
    assert.equal(p1.certification?.verdict, 'certified');
    assert.equal(p1.questions?.data.length, 100);
    assert.equal(p1.questions?.has_more, true);
    const p2 = CertifyPollSchema.parse(
      (await call(apis.B, 'GET', `/v1/certify?batch_id=${id}&include=questions&limit=100&after=${p1.questions?.last_id}`, { key })).body,
    );
    assert.equal(p2.questions?.data.length, 50);
    assert.equal(p2.questions?.has_more, false);
    const ids = [...(p1.questions?.data ?? []), ...(p2.questions?.data ?? [])].map((q) => q.id);
    assert.equal(new Set(ids).size, 150);
    for (const q of [...(p1.questions?.data ?? []), ...(p2.questions?.data ?? [])]) assert.equal(q.judgments.length, 3 * 2);
    const lines = await jsonl(apis.B, key, `/v1/certify?batch_id=${id}&format=jsonl`);
    assert.deepEqual(
      lines.records.map((r) => (r as { id: string }).id),
      ids,
    );
  });
});
