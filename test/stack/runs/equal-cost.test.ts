import assert from 'node:assert/strict';
import { TestPollSchema } from '../../../api/v1/run-resources';
import { answerKey } from '../../../domain/questions/check';
import { call, FORMS, newOrg } from '../api/helpers';
import { demoModes, runApis, untilEnded } from './helpers';

/**
 * Issue 39 item 2: every run answers whether the panel beats the same money spent on its best engine. Beside the
 * spec's baseline, the baseline's engine is sampled k times (k: the mode's whole cost per question over one
 * sample's, issue 52 item 2, the seats-only k beside it) and aggregated by Self-MoA and by majority vote; the dry run
 * prices them, the launch bills them, the poll reports each arm with its interval, and each question its arms'
 * answers. Issue 52 item 1: each question also records its seats' own answers and their vote, and the poll the
 * answer returned against that vote. k, the votes and the figures are recomputed here from what the run recorded.
 */

type Obj = Record<string, unknown>;
const micros = (usd: unknown): number => Math.round(Number(usd) * 1_000_000);
const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
const round4 = (x: number): number => Math.round(x * 10_000) / 10_000;
/** docs/runs.md: k = ⌈cost ÷ sample⌉, within 2…12. */
const kOf = (costMicros: number, sampleMicros: number): number => Math.min(12, Math.max(2, Math.ceil(costMicros / sampleMicros)));

/** The plurality of the readable answers, a tie to the answer of the first tied seat in seat order (docs/runs.md). */
function pluralityOf(seats: readonly { role: string; answer: string | null }[]): { answer: string; votes: number; role: string } | null {
  const count = (a: string): number => seats.filter((s) => s.answer === a).length;
  const readable = seats.filter((s) => s.answer !== null);
  if (readable.length === 0) return null;
  const most = Math.max(...readable.map((s) => count(s.answer as string)));
  const first = readable.find((s) => count(s.answer as string) === most) as { role: string; answer: string };
  return { answer: first.answer, votes: most, role: first.role };
}

describe('runs: equal-cost baselines (issue 39 item 2)', function () {
  this.timeout(600_000);
  const apis = runApis({ testsPerDay: 20, certificationsPerDay: 3, window: 16 });

  for (const form of FORMS) {
    it(`Form ${form}: the dry run prices the arms, the launch bills them, and k follows the mode's recorded costs`, async () => {
      const api = apis[form];
      const org = await newOrg(100);
      const modes = await demoModes(org.orgId);
      // 21 questions: enough recorded questions (20) on the tier for the second run's k to rest on them.
      const counts = form === 'A' ? { buckets: { light: 7, medium: 7, hard: 7 } } : { questions: { easy: 7, medium: 7, hard: 7 } };
      const body = { model: modes.strong[form], ...counts, judges: ['judge_a'] };
      const dry = async (svc: Obj, request: Obj = body): Promise<Obj> => {
        const r = await call(api, 'POST', '/v1/tests', { key: org.ownerKey, body: { ...request, dry_run: true, svc } });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        return r.body;
      };

      const without = await dry({ baselines: false });
      assert.equal((without.svc as Obj | undefined)?.baselines, null, 'turned off, the dry run names no arms');
      const withArms = await dry({});
      const arms = (withArms.svc as Obj).baselines as { arms: string[]; samples: Obj[]; price_usd: number };
      assert.deepEqual(arms.arms, ['self_moa', 'majority_vote']);
      assert.ok(arms.price_usd > 0, 'a live key pays for the extra samples');
      const [projected] = arms.samples;
      assert.deepEqual([projected.tier, projected.basis, projected.recorded_questions], ['plus', 'projected', 0]);
      // k at the mode's whole cost; the seats' alone is less (the judge and synthesis cost something), its k beside.
      assert.ok(micros(projected.mode_cost_usd) > micros(projected.mode_seats_cost_usd), JSON.stringify(projected));
      assert.equal(projected.samples, kOf(micros(projected.mode_cost_usd), micros(projected.sample_cost_usd)));
      assert.equal(projected.samples_seats_only, kOf(micros(projected.mode_seats_cost_usd), micros(projected.sample_cost_usd)));

      // The launch bills what its dry run quoted.
      const launched = await call(api, 'POST', '/v1/tests', { key: org.ownerKey, body });
      assert.equal(launched.status, 200, JSON.stringify(launched.body));
      assert.equal(micros(launched.body.billed_usd), micros(withArms.total_cost_usd));
      const first = launched.body.batch_id as string;
      const ended = TestPollSchema.parse((await untilEnded(api, org.ownerKey, 'tests', first)).body);
      assert.equal(ended.batch.state, 'completed');
      // The model listing carries the newest live run's arms as its evidence (svc.evidence).
      const listed = await call(api, 'GET', '/v1/models', { key: org.ownerKey });
      const entry = (listed.body.data as Obj[]).find((m) => m.id === body.model);
      const evidence = (entry?.svc as Obj | undefined)?.evidence as { batch_id: string; arms: Obj[] } | null | undefined;
      assert.deepEqual([evidence?.batch_id, evidence?.arms.map((a) => a.arm)], [first, ['mode', 'baseline', 'self_moa', 'majority_vote']]);
      // The same questions without the arms (a paired dry run prices exactly them): the difference is the arms' price.
      const spec = await dry({ same_questions_as: first, baselines: false }, { model: body.model, judges: body.judges });
      assert.equal(micros(launched.body.billed_usd) - micros(spec.total_cost_usd), micros(arms.price_usd));
      const page = await call(api, 'GET', `/v1/tests?batch_id=${first}&include=questions&include_transcript=true&limit=100`, {
        key: org.ownerKey,
      });
      const questions = TestPollSchema.parse(page.body).questions?.data ?? [];
      assert.equal(questions.length, 21);

      // Each question: k samples of the baseline's engine; each arm's verdict is the checker's on its own answer.
      for (const q of questions) {
        assert.ok(q.arms && q.costs, `${q.id} ran the arms`);
        assert.equal(q.arms.samples, projected.samples);
        const vote = q.arms.majority_vote;
        const moa = q.arms.self_moa;
        assert.ok(vote && moa, `${q.id}: both arms answered`);
        const final = (text: string | null): string =>
          /Final answer:\s*(.+)\s*$/m
            .exec(text ?? '')?.[1]
            ?.trim()
            .toLowerCase() ?? '';
        assert.equal(vote.correct, final(vote.answer) === q.reference_answer?.toLowerCase(), `${q.id}: the vote's answer checked`);
        assert.equal(moa.correct, final(moa.answer) === q.reference_answer?.toLowerCase(), `${q.id}: Self-MoA's answer checked`);
        // Self-MoA spends the vote's samples and an aggregation call on top.
        assert.ok(moa.cost_usd > vote.cost_usd, `${q.id}: the aggregation costs something`);
        assert.ok(vote.cost_usd > q.costs.baseline_usd, `${q.id}: the baseline's answer and more samples`);
        // Each sample's answer as the vote read it (issue 52): the first is the baseline's, and the vote is their
        // most common readable answer.
        const samples = q.arms.sample_answers ?? [];
        assert.equal(samples.length, projected.samples, `${q.id}: every sample recorded`);
        assert.equal(samples[0]?.correct, q.baseline_correct, `${q.id}: the first sample is the baseline's answer`);
        const counted = pluralityOf(samples.flatMap((a, i) => (a ? [{ role: String(i), answer: a.answer }] : [])));
        if (counted) assert.deepEqual([vote.extracted_answer, vote.votes], [counted.answer, counted.votes], `${q.id}: the vote`);

        // The seats' own answers (issue 52 item 1): the vote recomputed from them, its correctness its seat's.
        const seats = q.seats;
        assert.ok(seats, `${q.id} recorded its seats`);
        assert.equal(seats.seats.length, 3);
        const plural = pluralityOf(seats.seats);
        const named = seats.seats.find((x) => x.role === seats.vote.seat);
        if (plural) {
          const tied = seats.seats
            .filter((x) => x.answer !== null && x.answer !== plural.answer)
            .some((x) => {
              const n = seats.seats.filter((y) => y.answer === x.answer).length;
              return n === plural.votes;
            });
          assert.deepEqual(
            [seats.vote.answer, seats.vote.votes, seats.vote.seat, seats.vote.decided_by],
            [plural.answer, plural.votes, plural.role, tied ? 'tie_first' : 'plurality'],
            `${q.id}: the seats' vote`,
          );
        } else assert.ok(['none_readable', 'no_answer'].includes(seats.vote.decided_by), `${q.id}: no readable seat`);
        assert.equal(seats.vote.correct, named?.correct ?? false, `${q.id}: the vote is as right as the seat it names`);
        // A seat's answer as read and the checker on its text agree: right exactly when it reads as the reference does.
        const reference = answerKey(`Final answer: ${q.reference_answer ?? ''}`);
        for (const seat of seats.seats)
          if (seat.answer !== null) assert.equal(seat.correct, seat.answer === reference, `${q.id}: ${seat.role} ${seat.answer}`);
      }

      // The poll's arms are the questions' figures, recomputed here: accuracy and mean cost per arm.
      const summary = ended.batch.baselines?.arms ?? [];
      const by = Object.fromEntries(summary.map((a) => [a.arm, a]));
      const share = (f: (q: (typeof questions)[number]) => boolean): number => questions.filter(f).length / questions.length;
      assert.equal(by.mode.accuracy, Math.round(share((q) => q.mode_correct) * 10_000) / 10_000);
      assert.equal(by.majority_vote.accuracy, Math.round(share((q) => q.arms?.majority_vote?.correct === true) * 10_000) / 10_000);
      assert.equal(by.self_moa.accuracy, Math.round(share((q) => q.arms?.self_moa?.correct === true) * 10_000) / 10_000);
      const meanUsd = (f: (q: (typeof questions)[number]) => number): number => Math.round(mean(questions.map((q) => micros(f(q)))));
      assert.equal(
        micros(by.self_moa.cost_per_question_usd),
        meanUsd((q) => q.arms?.self_moa?.cost_usd ?? 0),
      );
      assert.equal(
        micros(by.mode.cost_per_question_usd),
        meanUsd((q) => q.costs?.mode_usd ?? 0),
      );
      for (const arm of ['baseline', 'self_moa', 'majority_vote']) {
        const d = by[arm].mode_minus_arm;
        assert.ok(d, `${arm}: the mode's paired difference`);
        assert.ok(d.ci_low !== null || d.no_interval_reason, `${arm}: an interval, or why there is none`);
        if (d.ci_low !== null && d.ci_high !== null) assert.ok(d.ci_low <= d.difference && d.difference <= d.ci_high);
      }

      // The returned answer against the seats' own vote, over the same questions: each accuracy, what the final
      // step threw away, and the paired difference.
      const seatsVote = ended.batch.seats_vote;
      assert.ok(seatsVote, 'the poll compares the answer returned with the seats’ vote');
      const modeRight = questions.filter((q) => q.mode_correct).length;
      const voteRight = questions.filter((q) => q.seats?.vote.correct).length;
      assert.deepEqual(
        [seatsVote.questions, seatsVote.mode.correct, seatsVote.seats_vote.correct],
        [questions.length, modeRight, voteRight],
      );
      assert.equal(seatsVote.seats_vote.accuracy, round4(voteRight / questions.length));
      assert.equal(seatsVote.lost, questions.filter((q) => q.seats?.vote.correct && !q.mode_correct).length);
      assert.equal(seatsVote.gained, questions.filter((q) => !q.seats?.vote.correct && q.mode_correct).length);
      assert.equal(seatsVote.mode_minus_vote.pairs, questions.length);
      assert.equal(seatsVote.mode_minus_vote.difference, round4(modeRight / questions.length - voteRight / questions.length));
      const dv = seatsVote.mode_minus_vote;
      assert.ok(dv.ci_low !== null || dv.no_interval_reason, 'an interval, or why there is none');

      // The second run's k rests on the first run's 21 recorded questions: their mean whole mode cost (and seat cost)
      // over their mean baseline cost, recomputed from include=questions.
      const whole = mean(questions.map((q) => micros(q.costs?.mode_usd)));
      const seats = mean(questions.map((q) => micros(q.costs?.mode_seats_usd)));
      const sample = mean(questions.map((q) => micros(q.costs?.baseline_usd)));
      const again = ((await dry({})).svc as Obj).baselines as { samples: Obj[] };
      const [recorded] = again.samples;
      assert.deepEqual([recorded.basis, recorded.recorded_questions], ['recorded', 21]);
      assert.ok(Math.abs(micros(recorded.mode_cost_usd) - whole) <= 1, `mean mode cost ${whole}`);
      assert.ok(Math.abs(micros(recorded.mode_seats_cost_usd) - seats) <= 1, `mean seat cost ${seats}`);
      assert.ok(Math.abs(micros(recorded.sample_cost_usd) - sample) <= 1, `mean sample cost ${sample}`);
      assert.equal(recorded.samples, kOf(whole, sample));
      assert.equal(recorded.samples_seats_only, kOf(seats, sample));
    });
  }

  it('svc.baselines is a boolean; a certification always runs the arms (false is 400, nothing charged)', async () => {
    const org = await newOrg(100);
    const modes = await demoModes(org.orgId);
    const bad = await call(apis.B, 'POST', '/v1/tests', {
      key: org.ownerKey,
      body: { model: modes.strong.B, questions: { easy: 1 }, svc: { baselines: 'no' } },
    });
    assert.deepEqual([bad.status, (bad.body.error as Obj).param], [400, 'svc.baselines']);
    for (const form of FORMS) {
      const refused = await call(apis[form], 'POST', '/v1/certify', {
        key: org.ownerKey,
        body: { model: modes.strong[form], dry_run: true, svc: { baselines: false } },
      });
      assert.deepEqual([refused.status, (refused.body.error as Obj).param], [400, 'svc.baselines']);
      const priced = await call(apis[form], 'POST', '/v1/certify', {
        key: org.ownerKey,
        body: { model: modes.strong[form], dry_run: true },
      });
      assert.equal(priced.status, 200, JSON.stringify(priced.body));
      const baselines = (priced.body.svc as Obj).baselines as { samples: Obj[]; price_usd: number };
      assert.equal(baselines.samples.length, 1, 'the certification runs the arms on its tier');
      assert.equal(micros(priced.body.total_cost_usd), 50_000_000, 'inside the flat $50');
    }
  });
});
