import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../infra/config';
import { repoRoot } from '../../infra/paths';
import { ensureGoProgram } from '../../stack/go-binary';
import { resolveTemporalBinary } from '../../stack/temporal-binary';
import { TEMPORAL_SERVER, TEMPORAL_UI_SERVER } from '../../stack/temporal-cluster';
import { toolEnv } from '../../stack/tool-env';

/**
 * `npm test` without a file argument: the test files under the FOLDERs split into `QUORUM_TEST_SHARDS` (default 2)
 * mocha processes run side by side, each with its own stack (test/harness/stack.ts: its own Temporal dev server and
 * Postgres on free ports). Usage: `node --import tsx test/harness/shards.ts FOLDER… -- MOCHA_ARG…`.
 *
 * Files are assigned greedily, longest first, to the shard with the least recorded time so far, from the seconds per
 * file in test/shard-times.json (a file not listed counts DEFAULT_SECONDS); test/stack/zz-audit.test.ts runs last in
 * every shard, over that shard's database. The files in ALONE run after the shards, in a last process alone on the
 * machine (with the audit too). Each shard's output goes to test-output/shards/shard-N.log and is printed
 * whole when the shard ends; a line per shard every minute shows progress; the last lines are one mocha-style summary
 * of all shards (what .ci/run reads). Each run writes the seconds it measured per file to
 * test-output/shards/times.json, the same shape as test/shard-times.json.
 */

const TIMES_FILE = path.join(repoRoot, 'test', 'shard-times.json');
const OUT_DIR = path.join(repoRoot, 'test-output', 'shards');
const AUDIT = 'test/stack/zz-audit.test.ts';
/**
 * Files run after the shards, alone on the machine, in a last mocha process of their own: the launcher's test with
 * `npm start`'s local model, llama.cpp on 2 threads, whose threads wait on each other spinning, so a call that takes
 * 50 s alone ran past undici's 300 s header timeout beside another shard.
 */
const ALONE = ['test/stack/launcher/local-model-start.test.ts'];
const DEFAULT_SECONDS = 5;
const PROGRESS_EVERY_MS = 60_000;
/** Enough for a few failures' messages and stacks; the rest stays in the shard's log. */
const FAILURE_LINES = 200;

interface Shard {
  index: number;
  name: string;
  files: string[];
  seconds: number;
  log: string;
  times: string;
}

interface Outcome {
  passing?: number;
  failing: number;
  pending: number;
  code: number | null;
}

function testFiles(folder: string): string[] {
  return fs
    .readdirSync(path.join(repoRoot, folder), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => path.posix.join(folder, f.split(path.sep).join('/')));
}

/** Longest first to the least loaded shard; ties go to the lower index and names order equal times: deterministic. */
function assign(files: readonly string[], seconds: Readonly<Record<string, number>>, count: number): string[][] {
  const load = Array.from({ length: count }, () => 0);
  const shards: string[][] = Array.from({ length: count }, () => []);
  const timeOf = (f: string): number => seconds[f] ?? DEFAULT_SECONDS;
  const ordered = files.filter((f) => f !== AUDIT && !ALONE.includes(f)).sort((a, b) => timeOf(b) - timeOf(a) || a.localeCompare(b));
  for (const file of ordered) {
    const least = load.indexOf(Math.min(...load));
    shards[least]?.push(file);
    load[least] = (load[least] ?? 0) + timeOf(file);
  }
  // Mocha's own order within a shard (test/unit before test/stack, by name), the audit after everything else.
  return shards.map((s) => [...s.sort(), ...(files.includes(AUDIT) ? [AUDIT] : [])]);
}

/**
 * What every shard would otherwise build or install at the same time: the compiled product under dist/ (a shard
 * running it while another rewrites it could load a half-written file; once built, a build writes nothing), the
 * Temporal CLI (built from Go on a fresh machine) and Chromium (apt-get). Python tools lock their own install.
 * The cluster's Temporal server and Web UI too, when a cluster test runs: built inside its `before` hook on a fresh
 * machine (minutes, with the event loop blocked), they ran the hook past its timeout.
 */
function prepare(files: readonly string[]): void {
  const started = Date.now();
  execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: repoRoot, stdio: 'inherit' });
  const tools = toolEnv(loadConfig(), process.env);
  resolveTemporalBinary(tools);
  if (files.some((f) => f.startsWith('test/stack/cluster/')))
    for (const program of [TEMPORAL_SERVER, TEMPORAL_UI_SERVER]) ensureGoProgram(program, tools, (line) => console.log(`shards: ${line}`));
  execFileSync('bash', [path.join(repoRoot, 'scripts', 'ensure-chromium.sh')], { stdio: ['ignore', 'ignore', 'inherit'] });
  console.log(`shards: built and checked the tools in ${Math.round((Date.now() - started) / 1000)} s`);
}

function outcomeOf(log: string, code: number | null): Outcome {
  const text = fs.readFileSync(log, 'utf8');
  const last = (word: string): number | undefined => {
    const all = [...text.matchAll(new RegExp(`^ *(\\d+) ${word}`, 'gm'))];
    const found = all[all.length - 1]?.[1];
    return found === undefined ? undefined : Number(found);
  };
  return { passing: last('passing'), failing: last('failing') ?? 0, pending: last('pending') ?? 0, code };
}

/** Mocha's own list of a shard's failures (its last "N failing" to the end), at most FAILURE_LINES lines. */
function failureReport(log: string): string | undefined {
  const lines = fs.readFileSync(log, 'utf8').split('\n');
  const from = lines.findLastIndex((l) => /^ *\d+ failing/.test(l));
  if (from < 0) return undefined;
  const report = lines.slice(from + 1);
  const shown = report.slice(0, FAILURE_LINES);
  return [
    ...shown,
    ...(report.length > shown.length ? [`… ${report.length - shown.length} more lines in ${path.relative(repoRoot, log)}`] : []),
  ].join('\n');
}

function progress(shards: readonly Shard[], done: ReadonlyMap<number, Outcome>, started: number): string {
  const parts = shards.map((s) => {
    if (done.has(s.index)) return `${s.name}: done`;
    if (!fs.existsSync(s.log)) return `${s.name}: waiting`;
    const text = fs.readFileSync(s.log, 'utf8');
    const passed = (text.match(/✔/g) ?? []).length;
    const failed = (text.match(/^ +\d+\) (?!.*:$)/gm) ?? []).length;
    return `${s.name}: ${passed} passed, ${failed} failed`;
  });
  return `shards [${minutes(Date.now() - started)}] ${parts.join(' · ')}`;
}

function minutes(ms: number): string {
  return ms >= 60_000 ? `${Math.round(ms / 60_000)}m` : `${Math.round(ms / 1000)}s`;
}

function runShard(shard: Shard, mochaArgs: readonly string[]): Promise<number | null> {
  const out = fs.openSync(shard.log, 'w');
  const reporter = mochaArgs.some((a) => a === '--reporter' || a === '-R' || a.startsWith('--reporter='))
    ? []
    : ['--reporter', 'test/harness/shard-reporter.ts'];
  const color = process.stdout.isTTY ? ['--color'] : [];
  const child = spawn(
    path.join(repoRoot, 'node_modules', '.bin', 'mocha'),
    ['--recursive', ...reporter, ...color, ...mochaArgs, ...shard.files],
    { cwd: repoRoot, stdio: ['ignore', out, out], env: { ...process.env, QUORUM_TEST_TIMES: shard.times } },
  );
  const stop = (): void => void child.kill('SIGINT');
  process.on('SIGINT', stop).on('SIGTERM', stop);
  return new Promise((resolve) => {
    child.once('error', (err) => {
      fs.appendFileSync(shard.log, `\nshards: cannot start mocha: ${err.message}\n`);
      resolve(null);
    });
    child.once('close', (code) => {
      fs.closeSync(out);
      resolve(code);
    });
  });
}

function mergeTimes(shards: readonly Shard[]): void {
  const merged: Record<string, number> = {};
  for (const s of shards) {
    if (!fs.existsSync(s.times)) continue;
    for (const [file, secs] of Object.entries(JSON.parse(fs.readFileSync(s.times, 'utf8')) as Record<string, number>)) {
      merged[file] = Math.round(((merged[file] ?? 0) + secs) * 10) / 10;
    }
  }
  const sorted = Object.fromEntries(Object.entries(merged).sort(([a], [b]) => a.localeCompare(b)));
  fs.writeFileSync(path.join(OUT_DIR, 'times.json'), `${JSON.stringify(sorted, null, 2)}\n`);
}

async function main(argv: readonly string[]): Promise<number> {
  const cut = argv.indexOf('--');
  const folders = cut < 0 ? argv : argv.slice(0, cut);
  const mochaArgs = cut < 0 ? [] : argv.slice(cut + 1);
  const count = Number(process.env.QUORUM_TEST_SHARDS ?? '2');
  if (!Number.isInteger(count) || count < 1) throw new Error(`QUORUM_TEST_SHARDS=${process.env.QUORUM_TEST_SHARDS} is not a count`);
  const recorded = JSON.parse(fs.readFileSync(TIMES_FILE, 'utf8')) as Record<string, number>;
  const files = folders.flatMap(testFiles).sort();
  fs.rmSync(OUT_DIR, { recursive: true, force: true });
  fs.mkdirSync(OUT_DIR, { recursive: true });
  const alone = files.filter((f) => ALONE.includes(f));
  const groups = [...assign(files, recorded, count), ...(alone.length > 0 ? [[...alone, ...files.filter((f) => f === AUDIT)]] : [])];
  const shards: Shard[] = groups.map((f, i) => ({
    index: i + 1,
    name: i < count ? `shard ${i + 1}/${count}` : 'the tail (alone)',
    files: f,
    seconds: Math.round(f.reduce((sum, file) => sum + (recorded[file] ?? DEFAULT_SECONDS), 0)),
    log: path.join(OUT_DIR, `shard-${i + 1}.log`),
    times: path.join(OUT_DIR, `times-${i + 1}.json`),
  }));
  prepare(files);
  const started = Date.now();
  for (const s of shards)
    console.log(`${s.name}: ${s.files.length} files, ${s.seconds} s recorded, log ${path.relative(repoRoot, s.log)}: ${s.files.join(' ')}`);
  const done = new Map<number, Outcome>();
  const ticker = setInterval(() => console.log(progress(shards, done, started)), PROGRESS_EVERY_MS);
  const run = async (s: Shard): Promise<void> => {
    const outcome = outcomeOf(s.log, await runShard(s, mochaArgs));
    done.set(s.index, outcome);
    console.log(`\n===== ${s.name} (exit ${outcome.code}, ${minutes(Date.now() - started)}): its whole output =====`);
    process.stdout.write(fs.readFileSync(s.log, 'utf8'));
    console.log(`===== end of ${s.name} =====\n`);
  };
  await Promise.all(shards.slice(0, count).map(run));
  for (const tail of shards.slice(count)) await run(tail);
  clearInterval(ticker);
  mergeTimes(shards);
  return summarize(shards, done, started);
}

/** One mocha-style summary of every shard, last in the output; non-zero when a shard failed or printed no summary. */
function summarize(shards: readonly Shard[], done: ReadonlyMap<number, Outcome>, started: number): number {
  const all = shards.map((s) => ({ s, o: done.get(s.index) ?? { failing: 0, pending: 0, code: null } }));
  const broken = all.filter(({ o }) => o.code !== 0 || o.passing === undefined);
  for (const { s, o } of all)
    console.log(`${s.name}: ${o.passing ?? 'no'} passing, ${o.failing} failing, ${o.pending} pending, exit ${o.code}`);
  for (const { s } of broken) {
    console.log(`${s.name} failed or printed no summary: see its output above (${path.relative(repoRoot, s.log)})`);
    // Repeated here because a CI page shows the run's last lines, and a later shard's output buries them.
    const report = failureReport(s.log);
    if (report !== undefined) console.log(`----- ${s.name}: mocha's failures -----\n${report}\n----- end of ${s.name}'s failures -----`);
  }
  const sum = (f: (o: Outcome) => number): number => all.reduce((n, { o }) => n + f(o), 0);
  console.log(`\n  ${sum((o) => o.passing ?? 0)} passing (${minutes(Date.now() - started)})`);
  if (sum((o) => o.failing) > 0) console.log(`  ${sum((o) => o.failing)} failing`);
  if (sum((o) => o.pending) > 0) console.log(`  ${sum((o) => o.pending)} pending`);
  return broken.length > 0 ? 1 : 0;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
