import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { upsertMode } from '../db/repositories/modes';
import { localDemoMode } from '../domain/modes';
import { armsJson, seatsVoteJson } from '../api/forms/equal-cost';
import { questionResults } from '../db/repositories/runs';
import { equalCostSummary, seatsVoteSummary } from '../domain/equal-cost';
import { RUN_LIMITS, type QuestionResult } from '../domain/runs';
import { loadConfig } from '../infra/config';
import { ensureBenchmarkSets } from '../stack/benchmark-sets';
import { ensureLocalModel, LOCAL_MODEL_NAME, startLocalModel } from '../stack/local-model';
import { toolEnv } from '../stack/tool-env';
import { stack, startStack, stopStack } from '../test/harness/stack';
import { call, newOrg, startApi } from '../test/stack/api/helpers';
import { startProductWorkers } from '../test/stack/deliberation/helpers';
import { untilEnded } from '../test/stack/runs/helpers';
import { machine, round, writeResults } from './results';

/**
 * Is the panel worth its price, on a real model (issue 39 item 4)? One test run through the real stack: the demo's
 * local panel (three tuned seats of SmolLM2-135M-Instruct on llama.cpp, the same model judging and synthesising)
 * on light real-benchmark questions (ARC-Easy, CommonsenseQA, BoolQ: the sets a 135M model answers between chance and
 * certainty; GSM8K and MATH it scores near zero on), against its three baselines: the same model once, k samples
 * aggregated by Self-MoA, and their majority vote; and against its own seats' vote (issue 52: the answer returned
 * against the seats' plurality on the same seat outputs). Prints each arm's accuracy with its Wilson 95% interval,
 * cost, median time and the mode's paired difference with its clustered 95% interval; per set too. Asserts nothing;
 * writes bench/results/evidence-*.json, with every question's raw answers (each seat's extracted answer and
 * correctness, their vote, the mode's answer, the baseline's, every sample's, the vote's and Self-MoA's) and k on
 * both bases (the mode's whole cost, its seats' alone), so any aggregation rule can be recomputed offline.
 * docs/evidence.md publishes one run.
 *
 * BENCH_EVIDENCE_N questions a run (default 100, at most 100: a run's bucket limit; a Wilson interval on an accuracy
 * near one half is then about ±10 points), BENCH_EVIDENCE_RUNS runs (default 1; 3 give about 300 questions, ±5.7). BENCH_EVIDENCE_SET names the question set (default real-mix).
 * BENCH_EVIDENCE_TABLES=<results JSON>: print the tables (arms, seats' vote, per set) from a run already written,
 * with no stack and no model (older files without per-question rows give their per-set shares as stored).
 */
const N = Number(process.env.BENCH_EVIDENCE_N ?? 100);
/**
 * Runs launched side by side, each of N questions drawn afresh (a run's bucket holds at most 100): their questions are
 * pooled, a question drawn twice kept once (its first run's), and every figure is computed over the pool by the
 * product's own summary (domain/equal-cost.ts), as one run of that size would.
 */
const RUNS = Number(process.env.BENCH_EVIDENCE_RUNS ?? 1);
/**
 * A first run of this many questions, not pooled: until a mode version has 20 recorded questions its k is projected
 * from the quote, which prices every call a vote may skip (the third seat, judge, synthesis); after it, k is chosen
 * from the mode's recorded whole cost per question, as any customer's second run is (docs/runs.md). 0: none.
 */
const WARMUP = Number(process.env.BENCH_EVIDENCE_WARMUP ?? 20);
const SET = process.env.BENCH_EVIDENCE_SET ?? 'real-mix';
const TABLES = process.env.BENCH_EVIDENCE_TABLES;
/** The local model is free here; these are declared prices, so the cost columns compare the arms' token spend. */
const PRICE = { input: 1, output: 2 };

type Obj = Record<string, unknown>;
interface Paired {
  difference: number;
  ci_low: number | null;
  ci_high: number | null;
  no_interval_reason: string | null;
}
interface Arm {
  arm: string;
  questions: number;
  accuracy: number;
  accuracy_ci_low: number;
  accuracy_ci_high: number;
  cost_per_question_usd: number;
  latency_ms_median: number;
  mode_minus_arm: Paired | null;
}
interface Accuracy {
  correct: number;
  accuracy: number;
  accuracy_ci_low: number;
  accuracy_ci_high: number;
}
/** The poll's `batch.seats_vote`: the answer returned against the seats' own vote. */
interface SeatsVote {
  questions: number;
  mode: Accuracy;
  seats_vote: Accuracy;
  mode_minus_vote: Paired;
  lost: number;
  gained: number;
  ties: number;
  unreadable: number;
}
interface ArmAnswer {
  answer: string | null;
  extracted_answer: string | null;
  correct: boolean;
  cost_usd: number;
}
/** One question as `include=questions&include_transcript=true` gives it (the fields read here). */
interface QuestionRow {
  id: string;
  source: { set: string; id: string } | null;
  reference_answer: string | null;
  mode_answer: string | null;
  mode_correct: boolean;
  baseline_answer: string | null;
  baseline_correct: boolean;
  costs: { mode_usd: number; mode_seats_usd: number; baseline_usd: number } | null;
  arms: {
    samples: number;
    samples_answered: number;
    self_moa: ArmAnswer | null;
    majority_vote: (ArmAnswer & { votes: number }) | null;
    sample_answers: ({ answer: string | null; correct: boolean } | null)[] | null;
  } | null;
  seats: {
    answer_kind: string;
    round: number;
    seats: { role: string; engine: string | null; answer: string | null; correct: boolean; not_asked: boolean }[];
    vote: { answer: string | null; votes: number; seat: string | null; correct: boolean; decided_by: string };
    mode_answer: string | null;
  } | null;
}

/** What the results JSON keeps of each question: every answer an aggregation rule could be recomputed from. */
interface QuestionRecord {
  id: string;
  set: string;
  source_id: string | null;
  reference: string | null;
  answer_kind: string | null;
  seats: { role: string; engine: string | null; extracted: string | null; correct: boolean; not_asked: boolean }[];
  seats_vote: { extracted: string | null; votes: number; seat: string | null; correct: boolean; decided_by: string } | null;
  mode: { answer: string | null; extracted: string | null; correct: boolean; cost_usd: number | null };
  baseline: { answer: string | null; extracted: string | null; correct: boolean; cost_usd: number | null };
  samples: ({ extracted: string | null; correct: boolean } | null)[] | null;
  majority_vote: { extracted: string | null; votes: number; correct: boolean; cost_usd: number } | null;
  self_moa: { answer: string | null; extracted: string | null; correct: boolean; cost_usd: number } | null;
}

function questionRecord(r: QuestionRow): QuestionRecord {
  const first = r.arms?.sample_answers?.[0] ?? null;
  return {
    id: r.id,
    set: r.source?.set ?? 'generated',
    source_id: r.source?.id ?? null,
    reference: r.reference_answer,
    answer_kind: r.seats?.answer_kind ?? null,
    seats: (r.seats?.seats ?? []).map((s) => ({
      role: s.role,
      engine: s.engine,
      extracted: s.answer,
      correct: s.correct,
      not_asked: s.not_asked,
    })),
    seats_vote: r.seats
      ? {
          extracted: r.seats.vote.answer,
          votes: r.seats.vote.votes,
          seat: r.seats.vote.seat,
          correct: r.seats.vote.correct,
          decided_by: r.seats.vote.decided_by,
        }
      : null,
    mode: { answer: r.mode_answer, extracted: r.seats?.mode_answer ?? null, correct: r.mode_correct, cost_usd: r.costs?.mode_usd ?? null },
    // The baseline's answer is the first sample's.
    baseline: {
      answer: r.baseline_answer,
      extracted: first?.answer ?? null,
      correct: r.baseline_correct,
      cost_usd: r.costs?.baseline_usd ?? null,
    },
    samples: r.arms?.sample_answers?.map((a) => a && { extracted: a.answer, correct: a.correct }) ?? null,
    majority_vote: r.arms?.majority_vote
      ? {
          extracted: r.arms.majority_vote.extracted_answer,
          votes: r.arms.majority_vote.votes,
          correct: r.arms.majority_vote.correct,
          cost_usd: r.arms.majority_vote.cost_usd,
        }
      : null,
    self_moa: r.arms?.self_moa
      ? {
          answer: r.arms.self_moa.answer,
          extracted: r.arms.self_moa.extracted_answer,
          correct: r.arms.self_moa.correct,
          cost_usd: r.arms.self_moa.cost_usd,
        }
      : null,
  };
}

function enginesFile(baseUrl: string, dir: string): string {
  const engine = (id: string, maker: string, backup: string): Obj => ({
    id,
    protocol: 'openai',
    base_url: baseUrl,
    model: LOCAL_MODEL_NAME,
    maker,
    tier: 'plus',
    input_usd_per_mtok: PRICE.input,
    output_usd_per_mtok: PRICE.output,
    context_tokens: 4096,
    max_output_tokens: 256,
    hedging: false,
    backup,
  });
  const file = path.join(dir, 'engines.json');
  // The run's judge recuses the maker that answered; this server has one model, declared again under a second maker.
  fs.writeFileSync(
    file,
    JSON.stringify({
      engines: [
        engine('local/smollm2', 'huggingface', 'local/smollm2-judge'),
        engine('local/smollm2-judge', 'second-opinion', 'local/smollm2'),
      ],
    }),
  );
  return file;
}

const pct = (x: number | null): string => (x === null ? '–' : `${(x * 100).toFixed(1)}%`);
const signed = (x: number | null): string => (x === null ? '–' : `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)}`);
const paired = (d: Paired | null): string =>
  d ? `${signed(d.difference)} [${signed(d.ci_low)}, ${signed(d.ci_high)}]${d.ci_low === null ? ` (${d.no_interval_reason})` : ''}` : '';

function table(arms: readonly Arm[]): string {
  const lines = [
    '| arm | questions | accuracy [95% CI] | cost / question | median time | mode − arm, points [95% CI] |',
    '| --- | ---: | --- | ---: | ---: | --- |',
  ];
  for (const a of arms) {
    lines.push(
      `| ${a.arm} | ${a.questions} | ${pct(a.accuracy)} [${pct(a.accuracy_ci_low)}, ${pct(a.accuracy_ci_high)}] | $${a.cost_per_question_usd.toFixed(6)} | ${(a.latency_ms_median / 1000).toFixed(1)} s | ${paired(a.mode_minus_arm)} |`,
    );
  }
  return lines.join('\n');
}

/** The answer the mode returned against its seats' own vote, on the same seat outputs. */
function seatsVoteTable(v: SeatsVote | null | undefined): string {
  if (!v) return '(no question recorded its seats’ answers)';
  const acc = (a: Accuracy): string => `${pct(a.accuracy)} [${pct(a.accuracy_ci_low)}, ${pct(a.accuracy_ci_high)}]`;
  return [
    '| answer | questions | accuracy [95% CI] | mode − vote, points [95% CI] | vote right, mode wrong | vote wrong, mode right | ties | unreadable |',
    '| --- | ---: | --- | --- | ---: | ---: | ---: | ---: |',
    `| returned by the mode | ${v.questions} | ${acc(v.mode)} | | | | | |`,
    `| the seats' vote | ${v.questions} | ${acc(v.seats_vote)} | ${paired(v.mode_minus_vote)} | ${v.lost} | ${v.gained} | ${v.ties} | ${v.unreadable} |`,
  ].join('\n');
}

/** Each answer's shares of right answers per set ("right/asked"); the seats' vote only where it was recorded. */
type PerSet = Record<string, Record<string, string>>;

/** Accuracy of each arm per source set, from the questions' own records. */
function perSet(rows: readonly QuestionRecord[]): PerSet {
  const sets = [...new Set(rows.map((r) => r.set))].sort();
  return Object.fromEntries(
    sets.map((set) => {
      const of = rows.filter((r) => r.set === set);
      const share = (f: (r: QuestionRecord) => boolean, among = of): string => `${among.filter(f).length}/${among.length}`;
      const voted = of.filter((r) => r.seats_vote !== null);
      return [
        set,
        {
          mode: share((r) => r.mode.correct),
          baseline: share((r) => r.baseline.correct),
          self_moa: share((r) => r.self_moa?.correct === true),
          majority_vote: share((r) => r.majority_vote?.correct === true),
          ...(voted.length > 0 && { seats_vote: share((r) => r.seats_vote?.correct === true, voted) }),
        },
      ];
    }),
  );
}

const SET_COLUMNS: [string, string][] = [
  ['mode', 'the mode'],
  ['seats_vote', "seats' vote"],
  ['baseline', 'baseline'],
  ['self_moa', 'Self-MoA'],
  ['majority_vote', 'majority vote'],
];

/** The per-set shares as docs/evidence.md's table (a column only where some set has it). */
function perSetTable(shares: PerSet): string {
  const columns = SET_COLUMNS.filter(([key]) => Object.values(shares).some((s) => s[key] !== undefined));
  const cell = (x: string | undefined): string => (x === undefined ? '–' : x.replace('/', ' / '));
  return [
    `| set | ${columns.map(([, name]) => name).join(' | ')} |`,
    `| --- | ${columns.map(() => '---:').join(' | ')} |`,
    ...Object.entries(shares).map(([set, s]) => `| ${set} | ${columns.map(([key]) => cell(s[key])).join(' | ')} |`),
  ].join('\n');
}

/** k per tier on both bases: the mode's whole cost per question (the run's k) and its seats' alone. */
function kLine(samples: readonly Obj[]): string {
  const usd = (x: unknown): string => `$${Number(x).toFixed(6)}`;
  return samples
    .map((p) => {
      const sample = usd(p.sample_cost_usd);
      const seats = `the seats' ${usd(p.mode_seats_cost_usd)} a question ÷ one sample's ${sample}`;
      // A plan from before the whole cost was kept chose k at the seats' cost.
      if (p.mode_cost_usd === null || p.mode_cost_usd === undefined)
        return `${String(p.tier)}: k = ${String(p.samples)} (${String(p.basis)}: ${seats})`;
      return `${String(p.tier)}: k = ${String(p.samples)} (${String(p.basis)}: the mode's whole ${usd(p.mode_cost_usd)} a question ÷ one sample's ${sample}); at ${seats}, k = ${String(p.samples_seats_only)}`;
    })
    .join('; ');
}

/** The tables of a results file already written (BENCH_EVIDENCE_TABLES). */
function printTables(file: string): void {
  const r = JSON.parse(fs.readFileSync(file, 'utf8')) as {
    date: string;
    samples?: Obj[];
    arms?: Arm[];
    seatsVote?: SeatsVote | null;
    perSet?: PerSet;
    perQuestion?: QuestionRecord[];
  };
  console.log(`## ${file} (${r.date.slice(0, 10)})\n`);
  console.log(`k: ${kLine(r.samples ?? [])}\n`);
  console.log(table(r.arms ?? []));
  console.log(`\nThe answer returned against the seats' own vote:\n\n${seatsVoteTable(r.seatsVote)}`);
  const shares = r.perQuestion ? perSet(r.perQuestion) : (r.perSet ?? {});
  console.log(`\nPer set (right / asked):\n\n${perSetTable(shares)}`);
}

/** Every question of the run, page after page (a page holds at most 100). */
async function allQuestions(api: Parameters<typeof call>[0], key: string, id: string): Promise<QuestionRow[]> {
  const rows: QuestionRow[] = [];
  for (let after: string | null = null; ;) {
    const page = await call(
      api,
      'GET',
      `/v1/tests?batch_id=${id}&include=questions&include_transcript=true&limit=100${after ? `&after=${after}` : ''}`,
      {
        key,
      },
    );
    const q = page.body.questions as { data: QuestionRow[]; last_id: string | null; has_more: boolean };
    rows.push(...q.data);
    if (!q.has_more || q.last_id === null) return rows;
    after = q.last_id;
  }
}

async function main(): Promise<void> {
  if (TABLES) return printTables(TABLES);
  if (!Number.isInteger(WARMUP) || WARMUP < 0 || WARMUP > RUN_LIMITS.bucketMax)
    throw new Error(`BENCH_EVIDENCE_WARMUP is 0…${RUN_LIMITS.bucketMax}, not ${process.env.BENCH_EVIDENCE_WARMUP}`);
  if (!Number.isInteger(RUNS) || RUNS < 1 || RUNS > 5)
    throw new Error(`BENCH_EVIDENCE_RUNS is 1…5, not ${process.env.BENCH_EVIDENCE_RUNS}`);
  if (!Number.isInteger(N) || N < RUN_LIMITS.bucketMin || N > RUN_LIMITS.bucketMax)
    throw new Error(
      `BENCH_EVIDENCE_N is ${RUN_LIMITS.bucketMin}…${RUN_LIMITS.bucketMax} (one bucket of a run), not ${process.env.BENCH_EVIDENCE_N}`,
    );
  const loadAtStart = os.loadavg();
  const started = Date.now();
  const date = new Date().toISOString();
  const tools = toolEnv(loadConfig(), process.env);
  process.env.QUORUM_BENCHMARK_SETS_DIR = ensureBenchmarkSets(tools);
  // Both cores for the model, four requests at a time: the stack around it mostly waits on it.
  const server = await startLocalModel(ensureLocalModel(tools), { threads: 2, parallel: 4 });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-evidence-'));
  const env = { ...process.env, QUORUM_ENGINES_FILE: enginesFile(server.baseUrl, dir), QUORUM_ENGINE_TIMEOUT_MS: '180000' };
  await startStack();
  const stops: (() => Promise<unknown>)[] = [() => server.stop(), () => stopStack()];
  try {
    const workers = await startProductWorkers(env);
    stops.unshift(() => workers.stop());
    const api = await startApi('B', { env, runs: { testsPerDay: 8, certificationsPerDay: 1, window: 4 } });
    stops.unshift(() => api.close());
    const org = await newOrg(100);
    const seed = localDemoMode({ idPrefix: 'evidence', company: 'EVID' }, 'local/smollm2');
    await upsertMode(stack().db, { ...seed, orgId: org.orgId, published: true });
    const body = { model: seed.ticker, questions: { easy: N }, judges: ['judge_a'], svc: { question_set: SET } };
    // One run after another, each with the machine to itself: a question's time is then what one run of it takes.
    // Each launch its own key: an identical body would otherwise be the same run (idempotency).
    const launch = async (n: number, i: number): Promise<{ id: string; batch: Obj }> => {
      const launched = await call(api, 'POST', '/v1/tests', {
        key: org.ownerKey,
        body: { ...body, questions: { easy: n } },
        headers: { 'Idempotency-Key': `evidence-${date}-${i}` },
      });
      if (launched.status !== 200) throw new Error(`launch: ${launched.status} ${JSON.stringify(launched.body)}`);
      const id = String(launched.body.batch_id);
      console.error(`run ${id}: ${n} questions from ${SET}, k from ${JSON.stringify((launched.body.svc as Obj | undefined)?.baselines)}`);
      return { id, batch: (await untilEnded(api, org.ownerKey, 'tests', id, 3 * 3_600_000)).body.batch as Obj };
    };
    const warmup = WARMUP > 0 ? await launch(WARMUP, 0) : null;
    const ids: string[] = [];
    const batches: Obj[] = [];
    for (let i = 1; i <= RUNS; i++) {
      const run = await launch(N, i);
      ids.push(run.id);
      batches.push(run.batch);
    }
    // The pool: each question once, from the first run that drew it.
    const seen = new Set<string>();
    const key = (q: { questionId: string; source?: { set: string; id: string } }): string =>
      q.source ? `${q.source.set}/${q.source.id}` : q.questionId;
    const results: QuestionResult[] = [];
    const rows: QuestionRow[] = [];
    for (const id of ids) {
      const byId = new Map((await allQuestions(api, org.ownerKey, id)).map((r) => [r.id, r]));
      for (const r of await questionResults(stack().db, id)) {
        if (seen.has(key(r))) continue;
        seen.add(key(r));
        results.push(r);
        const row = byId.get(r.questionId);
        if (row) rows.push(row);
      }
    }
    const summary = equalCostSummary(results);
    const arms = (summary ? armsJson(summary) : []) as unknown as Arm[];
    const votes = seatsVoteSummary(results);
    const seatsVote = (votes ? seatsVoteJson(votes) : null) as unknown as SeatsVote | null;
    const samples = batches.flatMap((b) => (b.baselines as { samples: Obj[] }).samples);
    const questions = rows.map(questionRecord);
    const shares = perSet(questions);
    const minutes = round((Date.now() - started) / 60_000, 1);
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    console.log(`\n## Equal-cost evidence on ${LOCAL_MODEL_NAME} (${date.slice(0, 10)}, ${commit}, ${minutes} min)\n`);
    console.log(
      `Runs: ${ids.map((id, i) => `${id} ${String(batches[i].state)}`).join(', ')}; ${results.length} questions pooled; k: ${kLine(samples)}\n`,
    );
    console.log(table(arms));
    console.log(`\nThe answer returned against the seats' own vote:\n\n${seatsVoteTable(seatsVote)}`);
    console.log(`\nPer set (right / asked):\n\n${perSetTable(shares)}`);
    const file = writeResults(
      'evidence',
      {
        date,
        commit,
        minutes,
        set: SET,
        questions: results.length,
        runs: ids.map((id, i) => ({ id, state: batches[i].state, questions: N })),
        warmup: warmup && { id: warmup.id, questions: WARMUP, state: warmup.batch.state, samples: (warmup.batch.baselines as Obj).samples },
        // k on both bases per run and tier: `samples` at the mode's whole cost, `samples_seats_only` at its seats'.
        samples,
        arms,
        seatsVote,
        perSet: shares,
        perQuestion: questions,
        machine: machine(loadAtStart),
      },
      'evidence-latest.json',
    );
    console.error(`wrote ${file}`);
  } finally {
    for (const stop of stops) await stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
