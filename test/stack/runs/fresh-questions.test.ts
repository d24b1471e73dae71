import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { getRun, questionsForRun } from '../../../db/repositories/runs';
import type { Form } from '../../../domain/form';
import type { Question } from '../../../domain/questions/types';
import { certificationSpec, type RunSpec } from '../../../domain/runs';
import { cancelToEnd } from '../../harness/audit';
import { stack } from '../../harness/stack';
import { call, newKey, newOrg, startApi, type Api } from '../api/helpers';
import { startProductWorkers } from '../deliberation/helpers';
import { demoModes } from './helpers';

/**
 * Issue 38 item 1: every live launch draws fresh questions, and a run's questions and reference answers are sealed
 * until it has ended. Measured before: two certifications of one mode a second apart under two keys shared 150 of
 * 150 questions, and the first one's questions and answers were readable while it ran.
 */

type Row = { id: string; sealed: boolean; question: string | null; reference_answer: string | null; mode_answer: string | null };

/** The questions a spec draws, as the run drew them (the real mix where installed, else the generated families). */
async function drawnBy(spec: RunSpec): Promise<Question[]> {
  const found = await questionsForRun(stack().db, '00000000-0000-0000-0000-000000000000', spec);
  if (!('questions' in found)) throw new Error(`no questions for ${JSON.stringify(spec.questionSetId)}: ${found.missing}`);
  return found.questions;
}

/**
 * What two independent draws of a certification's 150 questions share by chance, from the set it draws from:
 * the questions (by text) two certifications on independent random seeds have in common. Drawn for every pair of
 * `seeds` random seeds, their mean m and standard deviation s bound a fresh pair's overlap X by Cantelli's
 * inequality, P(X ≥ m + k·s) ≤ 1 / (1 + k²): at k = 10, at most 1%, for any distribution with that mean and spread
 * (the light bucket's small templates repeat a few questions; the rest almost never). A shared seed shares all 150.
 */
async function chanceBound(questionSetId: string | null, seeds: number): Promise<{ bound: number; mean: number; sd: number }> {
  const sets = await Promise.all(
    Array.from(
      { length: seeds },
      async () => new Set((await drawnBy(certificationSpec(randomInt(0, 2 ** 32), questionSetId))).map((q) => q.question)),
    ),
  );
  const overlaps: number[] = [];
  for (let i = 0; i < sets.length; i++)
    for (let j = i + 1; j < sets.length; j++) overlaps.push([...sets[i]].filter((q) => sets[j].has(q)).length);
  const mean = overlaps.reduce((a, b) => a + b, 0) / overlaps.length;
  const sd = Math.sqrt(overlaps.reduce((a, b) => a + (b - mean) ** 2, 0) / (overlaps.length - 1));
  return { bound: Math.ceil(mean + 10 * sd), mean, sd };
}

describe('runs: fresh questions on every live launch, sealed until the run ends (issue 38 item 1)', function () {
  this.timeout(300_000);
  const apis = {} as Record<Form, Api>;
  let workers: { stop(): Promise<void> };

  before(async () => {
    workers = await startProductWorkers();
    for (const form of ['A', 'B'] as const)
      apis[form] = await startApi(form, { runs: { testsPerDay: 20, certificationsPerDay: 3, window: 2 } });
  });
  after(async () => {
    for (const api of Object.values(apis)) await api.close();
    await workers.stop();
  });

  async function questions(api: Api, key: string, id: string): Promise<{ state: string; rows: Row[] }> {
    const r = await call(api, 'GET', `/v1/certify?batch_id=${id}&include=questions&include_transcript=true&limit=100`, { key });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const state = String((r.body.batch as { state?: string } | undefined)?.state ?? (r.body.certification as { state?: string })?.state);
    return { state, rows: (r.body.questions as { data: Row[] }).data };
  }

  for (const form of ['A', 'B'] as const) {
    it(`Form ${form}: two certifications of one mode back to back under two keys share no more than chance; questions sealed while running`, async () => {
      const api = apis[form];
      const org = await newOrg(150);
      const modes = await demoModes(org.orgId);
      const otherKey = await newKey(org.orgId);
      const one = await call(api, 'POST', '/v1/certify', { key: org.ownerKey, body: { model: modes.strong[form] } });
      const two = await call(api, 'POST', '/v1/certify', { key: otherKey, body: { model: modes.strong[form] } });
      assert.equal(one.status, 200, JSON.stringify(one.body));
      assert.equal(two.status, 200, JSON.stringify(two.body));
      const ids = [String(one.body.batch_id), String(two.body.batch_id)];
      assert.notEqual(ids[0], ids[1]);
      try {
        const [a, b] = await Promise.all(ids.map((id) => getRun(stack().db, id)));
        // Both drew from the set the launch chose (the real mix where installed); chance is measured on that set.
        assert.equal(a.spec.questionSetId, b.spec.questionSetId);
        const chance = await chanceBound(a.spec.questionSetId, 10);
        const drawn = await Promise.all([a, b].map((run) => drawnBy(run.spec)));
        const first = new Set(drawn[0].map((q) => q.question));
        const shared = drawn[1].filter((q) => first.has(q.question)).length;
        assert.ok(
          shared <= chance.bound,
          `shared ${shared} of 150; chance: mean ${chance.mean.toFixed(2)}, sd ${chance.sd.toFixed(2)}, bound ${chance.bound}`,
        );

        // While the first runs: its recorded rows show ids and verdicts, but no question, reference or answer.
        let live: { state: string; rows: Row[] } = { state: 'queued', rows: [] };
        for (let i = 0; i < 120 && live.rows.length === 0; i++) {
          live = await questions(api, org.ownerKey, ids[0]);
          if (live.rows.length === 0) await new Promise((r) => setTimeout(r, 500));
        }
        assert.ok(live.rows.length > 0, 'a question was recorded while the run was live');
        assert.ok(!['completed', 'incomplete', 'failed', 'cancelled'].includes(live.state), `still running: ${live.state}`);
        for (const row of live.rows)
          assert.deepEqual([row.sealed, row.question, row.reference_answer, row.mode_answer], [true, null, null, null], row.id);

        // Nor can a paired test run, cancelled early, show them: pairing waits for the run to end.
        const paired = await call(api, 'POST', '/v1/tests', {
          key: org.ownerKey,
          body: { model: modes.strong[form], svc: { same_questions_as: ids[0] } },
        });
        assert.equal(paired.status, 400, JSON.stringify(paired.body));
        assert.equal(paired.body.error?.param, 'svc.same_questions_as');

        // Once it has ended (here cancelled), the same rows show the questions it drew and their reference answers.
        await cancelToEnd(ids[0]);
        const ended = await questions(api, org.ownerKey, ids[0]);
        const byId = new Map(drawn[0].map((q) => [q.id, q]));
        assert.ok(ended.rows.length >= live.rows.length);
        for (const row of ended.rows) {
          assert.equal(row.sealed, false);
          assert.equal(row.question, byId.get(row.id)?.question, row.id);
          assert.equal(row.reference_answer, byId.get(row.id)?.answer, row.id);
          assert.ok(row.mode_answer !== null, 'the transcript shows once the run has ended');
        }
      } finally {
        for (const id of ids) await cancelToEnd(id);
      }
    });
  }
});
