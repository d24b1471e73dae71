import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { upsertMode } from '../db/repositories/modes';
import { localDemoMode } from '../domain/modes';
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
 * aggregated by Self-MoA, and their majority vote. Prints each arm's accuracy with its Wilson 95% interval, cost,
 * median time and the mode's paired difference with its clustered 95% interval; per set too. Asserts nothing;
 * writes bench/results/evidence-*.json. docs/evidence.md publishes one run.
 *
 * BENCH_EVIDENCE_N questions (default 100: a Wilson interval on an accuracy near one half is then about ±10 points).
 */
const N = Number(process.env.BENCH_EVIDENCE_N ?? 100);
const SET = process.env.BENCH_EVIDENCE_SET ?? 'real-mix';
/** The local model is free here; these are declared prices, so the cost columns compare the arms' token spend. */
const PRICE = { input: 1, output: 2 };

type Obj = Record<string, unknown>;
interface Arm {
  arm: string;
  questions: number;
  accuracy: number;
  accuracy_ci_low: number;
  accuracy_ci_high: number;
  cost_per_question_usd: number;
  latency_ms_median: number;
  mode_minus_arm: { difference: number; ci_low: number | null; ci_high: number | null; no_interval_reason: string | null } | null;
}
interface QuestionRow {
  source: { set: string } | null;
  mode_correct: boolean;
  baseline_correct: boolean;
  arms: { self_moa: { correct: boolean } | null; majority_vote: { correct: boolean } | null } | null;
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

function table(arms: readonly Arm[]): string {
  const lines = [
    '| arm | questions | accuracy [95% CI] | cost / question | median time | mode − arm, points [95% CI] |',
    '| --- | ---: | --- | ---: | ---: | --- |',
  ];
  for (const a of arms) {
    const d = a.mode_minus_arm;
    const diff = d
      ? `${signed(d.difference)} [${signed(d.ci_low)}, ${signed(d.ci_high)}]${d.ci_low === null ? ` (${d.no_interval_reason})` : ''}`
      : '';
    lines.push(
      `| ${a.arm} | ${a.questions} | ${pct(a.accuracy)} [${pct(a.accuracy_ci_low)}, ${pct(a.accuracy_ci_high)}] | $${a.cost_per_question_usd.toFixed(6)} | ${(a.latency_ms_median / 1000).toFixed(1)} s | ${diff} |`,
    );
  }
  return lines.join('\n');
}

/** Accuracy of each arm per source set, from the questions' own rows. */
function perSet(rows: readonly QuestionRow[]): Record<string, Record<string, string>> {
  const sets = [...new Set(rows.map((r) => r.source?.set ?? 'generated'))].sort();
  return Object.fromEntries(
    sets.map((set) => {
      const of = rows.filter((r) => (r.source?.set ?? 'generated') === set);
      const share = (f: (r: QuestionRow) => boolean): string => `${of.filter(f).length}/${of.length}`;
      return [
        set,
        {
          mode: share((r) => r.mode_correct),
          baseline: share((r) => r.baseline_correct),
          self_moa: share((r) => r.arms?.self_moa?.correct === true),
          majority_vote: share((r) => r.arms?.majority_vote?.correct === true),
        },
      ];
    }),
  );
}

async function main(): Promise<void> {
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
    const api = await startApi('B', { env, runs: { testsPerDay: 5, certificationsPerDay: 1, window: 4 } });
    stops.unshift(() => api.close());
    const org = await newOrg(100);
    const seed = localDemoMode({ idPrefix: 'evidence', company: 'EVID' }, 'local/smollm2');
    await upsertMode(stack().db, { ...seed, orgId: org.orgId, published: true });
    const body = { model: seed.ticker, questions: { easy: N }, judges: ['judge_a'], svc: { question_set: SET } };
    const launched = await call(api, 'POST', '/v1/tests', { key: org.ownerKey, body });
    if (launched.status !== 200) throw new Error(`launch: ${launched.status} ${JSON.stringify(launched.body)}`);
    const id = String(launched.body.batch_id);
    console.error(`run ${id}: ${N} questions from ${SET}, k from ${JSON.stringify((launched.body.svc as Obj | undefined)?.baselines)}`);
    const ended = await untilEnded(api, org.ownerKey, 'tests', id, 3 * 3_600_000);
    const batch = ended.body.batch as Obj & { state: string; baselines: { samples: Obj[]; arms: Arm[] | null } };
    const page = await call(api, 'GET', `/v1/tests?batch_id=${id}&include=questions&limit=${N}`, { key: org.ownerKey });
    const rows = (page.body.questions as { data: QuestionRow[] }).data;
    const arms = batch.baselines.arms ?? [];
    const minutes = round((Date.now() - started) / 60_000, 1);
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    console.log(`\n## Equal-cost evidence on ${LOCAL_MODEL_NAME} (${date.slice(0, 10)}, ${commit}, ${minutes} min)\n`);
    console.log(`Run state: ${batch.state}; k: ${JSON.stringify(batch.baselines.samples)}\n`);
    console.log(table(arms));
    console.log(`\nPer set (right / asked):\n${JSON.stringify(perSet(rows), null, 2)}`);
    const file = writeResults(
      'evidence',
      {
        date,
        commit,
        minutes,
        set: SET,
        questions: N,
        state: batch.state,
        samples: batch.baselines.samples,
        arms,
        perSet: perSet(rows),
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
