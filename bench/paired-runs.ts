import os from 'node:os';
import { TestPollSchema } from '../api/v1/run-resources';
import { findMode, upsertMode } from '../db/repositories/modes';
import { studentTQuantile } from '../domain/statistics';
import { stack, startStack, stopStack } from '../test/harness/stack';
import { call, newOrg, startApi, type Api } from '../test/stack/api/helpers';
import { startProductWorkers } from '../test/stack/deliberation/helpers';
import { demoModes, untilEnded } from '../test/stack/runs/helpers';
import { machine, round, writeResults } from './results';

/**
 * Paired re-runs (issue 28 item 4): how much narrower the interval of a difference in win rate is when the second
 * run takes the first's questions (`svc.same_questions_as`, the poll's `svc.paired`) than when it draws its own.
 * Per seed (a fresh organisation, so fresh questions): run A, the strong demo mode; then, against it, one run paired
 * with A and one on questions of its own for each of: the strong mode again unchanged (how much of a difference is
 * the judges' noise), a second version of it (released after A: the same seats and baseline, critique turned off,
 * the case paired re-runs are for), and the weak demo mode (another mode altogether). A run "of its own" is launched
 * through Form A, whose request names the mode by id, so its seed, and its questions, differ from A's. All through
 * the API and the product workers on `sim` engines. The independent interval of a difference is D ± t·√(SE₁² + SE₂²) with each run's
 * own clustered SE and Welch–Satterthwaite degrees of freedom; the paired one is the poll's. Prints and writes
 * bench/results/paired-runs-<date>.json; asserts nothing.
 */
const SEEDS = Number(process.env.BENCH_PAIRED_SEEDS ?? 8);
const PER_BUCKET = Number(process.env.BENCH_PAIRED_PER_BUCKET ?? 10);
const QUESTIONS = { easy: PER_BUCKET, medium: PER_BUCKET, hard: PER_BUCKET };

interface RunFigures {
  id: string;
  winRate: number;
  standardError: number;
  clusters: number;
}

async function launch(api: Api, key: string, body: Record<string, unknown>): Promise<RunFigures> {
  const r = await call(api, 'POST', '/v1/tests', { key, body });
  if (r.status !== 200) throw new Error(`launch ${JSON.stringify(body)}: ${r.status} ${JSON.stringify(r.body)}`);
  const id = r.body.batch_id as string;
  const p = TestPollSchema.parse((await untilEnded(api, key, 'tests', id, 900_000)).body);
  const w = p.batch.results?.overall;
  if (p.batch.state !== 'completed' || !w || w.win_rate === null || w.standard_error === null)
    throw new Error(`run ${id} ended ${p.batch.state} without a win rate`);
  return { id, winRate: w.win_rate, standardError: w.standard_error, clusters: w.questions };
}

async function pairedOf(api: Api, key: string, id: string): Promise<{ difference: number; width: number; pairs: number }> {
  const p = TestPollSchema.parse((await call(api, 'GET', `/v1/tests?batch_id=${id}`, { key })).body).svc?.paired;
  if (!p || p.difference === null || p.ci_low === null || p.ci_high === null) throw new Error(`run ${id} has no paired difference`);
  return { difference: p.difference, width: p.ci_high - p.ci_low, pairs: p.pairs };
}

/** The 95% interval's width for the difference of two independent runs (Welch–Satterthwaite degrees of freedom). */
function independentWidth(a: RunFigures, b: RunFigures): number {
  const va = a.standardError ** 2;
  const vb = b.standardError ** 2;
  const df = (va + vb) ** 2 / (va ** 2 / (a.clusters - 1) + vb ** 2 / (b.clusters - 1));
  return 2 * studentTQuantile(0.975, df) * Math.sqrt(va + vb);
}

type Pair = 'sameVersion' | 'nextVersion' | 'weakMode';

interface Comparison {
  seed: number;
  paired: { difference: number; width: number; pairs: number };
  /** A and the other version's run on questions of its own. */
  independent: { difference: number; width: number };
  /** The paired runs analysed as if independent: the same questions, without the pairing. */
  samePairsUnpaired: { width: number };
}

const mean = (xs: readonly number[]): number => xs.reduce((t, x) => t + x, 0) / xs.length;

async function main(): Promise<void> {
  const loadAtStart = os.loadavg();
  const date = new Date().toISOString();
  await startStack();
  const workers = await startProductWorkers();
  const settings = { runs: { testsPerDay: 1000, certificationsPerDay: 3, window: 3 * PER_BUCKET } };
  const b = await startApi('B', settings);
  const a = await startApi('A', settings);
  const started = performance.now();
  const rows: Record<Pair, Comparison[]> = { sameVersion: [], nextVersion: [], weakMode: [] };
  try {
    for (let seed = 0; seed < SEEDS; seed++) {
      const org = await newOrg(10_000);
      const modes = await demoModes(org.orgId);
      const key = org.ownerKey;
      const first = await launch(b, key, { model: modes.strong.B, questions: QUESTIONS });
      const paired = { same_questions_as: first.id };
      const own = { buckets: { light: PER_BUCKET, medium: PER_BUCKET, hard: PER_BUCKET } };
      const [weakPaired, weakOwn, samePaired, sameOwn] = await Promise.all([
        launch(b, key, { model: modes.weak.B, svc: paired }),
        launch(a, key, { model: modes.weak.A, ...own }),
        launch(b, key, { model: modes.strong.B, svc: paired }),
        launch(a, key, { model: modes.strong.A, ...own }),
      ]);
      // Version 2: the same seats (so the same baseline) answering without critique.
      const v1 = await findMode(stack().db, { orgId: org.orgId, form: 'A', model: modes.strong.A });
      if (!v1) throw new Error('the strong demo mode is gone');
      await upsertMode(stack().db, { ...v1, config: { ...v1.config, critique: 'never', rounds: 1 } });
      const [nextPaired, nextOwn] = await Promise.all([
        launch(b, key, { model: modes.strong.B, svc: paired }),
        // The request of version 1's own run, so its questions (the seed is the request's and the day's), not A's.
        launch(a, key, { model: modes.strong.A, ...own }),
      ]);
      for (const [name, pairedRun, ownRun] of [
        ['sameVersion', samePaired, sameOwn],
        ['nextVersion', nextPaired, nextOwn],
        ['weakMode', weakPaired, weakOwn],
      ] as const) {
        const c: Comparison = {
          seed,
          paired: await pairedOf(b, key, pairedRun.id),
          independent: { difference: ownRun.winRate - first.winRate, width: independentWidth(first, ownRun) },
          samePairsUnpaired: { width: independentWidth(first, pairedRun) },
        };
        rows[name].push(c);
        console.log(
          `seed ${seed} ${name}: paired ${c.paired.difference.toFixed(3)} ± ${(c.paired.width / 2).toFixed(3)} (${c.paired.pairs} pairs); independent runs ${c.independent.difference.toFixed(3)} ± ${(c.independent.width / 2).toFixed(3)}; same runs unpaired ± ${(c.samePairsUnpaired.width / 2).toFixed(3)}`,
        );
      }
    }
  } finally {
    await a.close();
    await b.close();
    await workers.stop();
  }
  const summary = Object.fromEntries(
    Object.entries(rows).map(([name, cs]) => {
      const paired = mean(cs.map((c) => c.paired.width));
      const independent = mean(cs.map((c) => c.independent.width));
      const unpaired = mean(cs.map((c) => c.samePairsUnpaired.width));
      return [
        name,
        {
          seeds: cs.length,
          meanPairedWidth: round(paired, 4),
          meanIndependentWidth: round(independent, 4),
          meanSameRunsUnpairedWidth: round(unpaired, 4),
          pairedOverIndependent: round(paired / independent, 3),
          pairedOverSameRunsUnpaired: round(paired / unpaired, 3),
          perSeedRatio: cs.map((c) => round(c.paired.width / c.independent.width, 3)),
          meanPairedDifference: round(mean(cs.map((c) => c.paired.difference)), 4),
          meanIndependentDifference: round(mean(cs.map((c) => c.independent.difference)), 4),
        },
      ];
    }),
  );
  console.log(JSON.stringify(summary, null, 2));
  const file = writeResults('paired-runs', {
    date,
    design: {
      seeds: SEEDS,
      questionsPerRun: 3 * PER_BUCKET,
      judges: 3,
      repeats: 1,
      engines: 'sim (test stack, zero latency)',
      note: 'A: the strong demo mode. sameVersion: it again; nextVersion: its version 2 (critique never, one round; same seats and baseline); weakMode: the weak demo mode. paired: that run with svc.same_questions_as A; independent: it on questions of its own. Widths of 95% intervals of the difference in win rate.',
    },
    wallSeconds: round((performance.now() - started) / 1000, 1),
    summary,
    rows,
    machine: machine(loadAtStart),
  });
  console.log(`wrote ${file}`);
}

main()
  .then(() => stopStack())
  .catch(async (err: unknown) => {
    console.error(err);
    await stopStack();
    process.exitCode = 1;
  });
