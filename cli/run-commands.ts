import { SingleBar, MultiBar, Presets } from 'cli-progress';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { RunRecord } from '../db/repositories/runs';
import { microsToDecimal } from '../domain/money';
import { parseQuestionSet } from '../domain/questions/import';
import { BUCKETS } from '../domain/questions/types';
import { ENDED_STATES, runTiming, SIMULATED_RUN_NOTE, type RunProgress } from '../domain/runs';
import { cancelOrgRun } from '../operations/run-cancel';
import { importQuestionSet } from '../operations/question-sets';
import { anyRun, EVERY_RUN_SCOPE, listOrgRuns, progressOf, RUN_PAGE } from '../operations/run-list';
import type { TemporalOptional } from '../operations/deps';
import { command, dollars, OPERATOR, required, UsageError, type Command, type CommandContext } from './command';

/** Operators' view of runs (spec 02): watch one with a progress bar, list an organisation's, cancel one; import question sets. */

const batchId = z.object({ files: z.array(z.string()).length(1, 'name one BATCH_ID') }).transform((v) => v.files[0]);

async function runOf(ctx: CommandContext, id: string): Promise<RunRecord> {
  if (!/^[0-9a-f-]{36}$/i.test(id)) throw new UsageError(`${id} is not a batch id (a uuid)`);
  return anyRun(ctx.resources, OPERATOR, id);
}

/** A test key's run answered on `sim` engines: said wherever the run is shown (DESIGN §10). */
const simulated = (run: RunRecord): boolean => run.keyKind === 'test';

function verdictLine(run: RunRecord): string {
  const note = simulated(run) ? `\n${SIMULATED_RUN_NOTE}` : '';
  return `${summaryLine(run)}${note}`;
}

function summaryLine(run: RunRecord): string {
  const s = run.summary;
  const name = simulated(run) ? `Simulated run ${run.id}` : `Run ${run.id}`;
  if (!s) return `${name} ended ${run.state}${run.errorCode ? ` (${run.errorCode}: ${run.errorMessage ?? ''})` : ''}.`;
  const w = s.overall.winRate;
  const rate = w
    ? `win rate ${w.winRate.toFixed(3)}, 95% interval [${w.interval.low.toFixed(3)}, ${w.interval.high.toFixed(3)}]`
    : 'no readable verdicts';
  const verdict = s.verdict ? `${s.verdict} (lower bound ${w ? w.interval.low.toFixed(3) : 'n/a'}); ` : '';
  return `${name} ${run.state}: ${verdict}${rate}; accuracy mode ${(s.overall.mode.rate * 100).toFixed(1)}% vs baseline ${(s.overall.baseline.rate * 100).toFixed(1)}%; refunded ${dollars(BigInt(run.refundedMicros))}.`;
}

const seconds = (ms: number): string => `${Math.round(ms / 1000)}s`;

const runWatch = command({
  name: 'run watch',
  usage: 'BATCH_ID [--every SECONDS]',
  options: { every: { type: 'string' } },
  positionals: true,
  input: z.object({ files: z.array(z.string()).length(1, 'name one BATCH_ID'), every: z.coerce.number().min(0.2).max(60).default(2) }),
  async run({ files, every }, ctx) {
    const { db } = ctx.resources;
    let run = await runOf(ctx, files[0]);
    const client = await ctx.resources.temporal();
    // Bars on stderr, so `--json` output stays clean; one bar per bucket plus the whole run.
    const bars = new MultiBar(
      {
        format: '{bucket} |{bar}| {value}/{total} {extra}',
        hideCursor: true,
        clearOnComplete: false,
        stream: process.stderr,
        // Piped to a file or a CI log, the bars are printed as lines at each poll instead of redrawn.
        noTTYOutput: true,
        notTTYSchedule: every * 1000,
      },
      Presets.shades_classic,
    );
    const total: SingleBar = bars.create(run.totalQuestions, 0, { bucket: 'all   ', extra: '' });
    const perBucket = new Map(
      BUCKETS.filter((b) => run.spec.counts[b] > 0).map((b) => [b, bars.create(run.spec.counts[b], 0, { bucket: b.padEnd(6), extra: '' })]),
    );
    let progress: RunProgress;
    for (;;) {
      progress = await progressOf({ db, client }, run);
      const done = BUCKETS.reduce((n, b) => n + progress.done[b], 0);
      const { elapsedMs, leftMs } = runTiming({ progress, finishedAt: run.finishedAt, estimatedMinutes: run.estimatedMinutes }, Date.now());
      total.update(done, { extra: `${progress.state} · elapsed ${seconds(elapsedMs)} · left ~${seconds(leftMs)}` });
      for (const [b, bar] of perBucket) bar.update(progress.done[b]);
      if (ENDED_STATES.includes(run.state)) break;
      await new Promise((resolve) => setTimeout(resolve, every * 1000));
      run = await anyRun({ db }, OPERATOR, run.id);
    }
    bars.stop();
    return {
      json: { batch_id: run.id, state: run.state, simulated: simulated(run), progress, summary: run.summary },
      text: verdictLine(run),
    };
  },
});

/** The operator reads and stops any organisation's runs, through the operations the API and MCP use. */
async function runDeps(ctx: CommandContext): Promise<TemporalOptional<'db' | 'form'>> {
  return { db: ctx.resources.db, client: await ctx.resources.temporal(), form: ctx.config.QUORUM_FORM };
}

const runList = command({
  name: 'run list',
  usage: '--org ORG_ID [--limit N]',
  options: { org: { type: 'string' }, limit: { type: 'string' } },
  input: z.object({ org: required, limit: z.coerce.number().int().min(1).max(RUN_PAGE.max).default(RUN_PAGE.default) }),
  async run({ org, limit }, ctx) {
    const page = await listOrgRuns(await runDeps(ctx), { orgId: org, scopes: EVERY_RUN_SCOPE }, { limit });
    const runs = page.views.map((v) => ({ ...v.run, state: v.progress.state }));
    const rows = runs.map((r) =>
      [
        r.id,
        r.kind.padEnd(13),
        (simulated(r) ? 'simulated' : 'live').padEnd(9),
        r.state.padEnd(10),
        r.model,
        `${r.totalQuestions} q`,
        `$${microsToDecimal(BigInt(r.billedMicros))}`,
        r.summary?.verdict ?? '',
        r.createdAt.toISOString(),
      ].join('  '),
    );
    return {
      json: {
        org_id: org,
        runs: runs.map((r) => ({
          batch_id: r.id,
          kind: r.kind,
          simulated: simulated(r),
          state: r.state,
          model: r.model,
          total_questions: r.totalQuestions,
          verdict: r.summary?.verdict ?? null,
          created_at: r.createdAt.toISOString(),
        })),
      },
      text: rows.length ? rows.join('\n') : `No runs for ${org}.`,
    };
  },
});

const runCancel = command({
  name: 'run cancel',
  usage: 'BATCH_ID',
  options: {},
  positionals: true,
  input: z.object({ files: z.array(z.string()) }).pipe(batchId),
  async run(id, ctx) {
    const run = await runOf(ctx, id);
    const deps = await runDeps(ctx);
    const { client } = deps;
    if (!client && !ENDED_STATES.includes(run.state))
      throw new Error('Temporal is not reachable; the run cannot be told to stop. Start the stack and retry.');
    const { view, signalled } = client
      ? await cancelOrgRun({ ...deps, client }, { orgId: run.orgId, scopes: EVERY_RUN_SCOPE }, { batchId: run.id })
      : { view: { run }, signalled: false };
    const now = view.run;
    const json = { batch_id: now.id, state: now.state, refunded_usd: Number(microsToDecimal(BigInt(now.refundedMicros))) };
    if (!signalled) return { json, text: `Run ${now.id} already ended ${now.state}.` };
    if (!ENDED_STATES.includes(now.state))
      return {
        json,
        text: `Run ${now.id} is stopping; unanswered questions are credited back when it ends (quorum run watch ${now.id}).`,
      };
    return { json, text: `Run ${now.id} ${now.state}; ${dollars(BigInt(now.refundedMicros))} credited back for its unanswered questions.` };
  },
});

const questionsImport = command({
  name: 'questions import',
  usage: 'FILE.jsonl --org ORG_ID [--name NAME]',
  options: { org: { type: 'string' }, name: { type: 'string' } },
  positionals: true,
  input: z.object({
    files: z.array(z.string()).length(1, 'name one FILE.jsonl'),
    org: required,
    name: z.string().trim().min(1).max(200).optional(),
  }),
  async run({ files, org, name }, { resources }) {
    let text: string;
    try {
      text = await fs.promises.readFile(files[0], 'utf8');
    } catch (err) {
      throw new UsageError(`${files[0]} cannot be read: ${(err as Error).message}`);
    }
    const parsed = parseQuestionSet(text);
    // All or nothing: every bad line is reported and nothing is stored.
    if (!parsed.ok)
      throw new Error(
        `${files[0]}: nothing imported; ${parsed.errors.length} bad line(s):\n${parsed.errors.map((e) => `  line ${e.line}: ${e.reason}`).join('\n')}`,
      );
    const id = await importQuestionSet(resources, OPERATOR, {
      orgId: org,
      name: name ?? path.basename(files[0]),
      questions: parsed.questions,
    });
    const counts = Object.fromEntries(BUCKETS.map((b) => [b, parsed.questions.filter((q) => q.bucket === b).length]));
    return {
      json: { question_set: id, org_id: org, questions: parsed.questions.length, per_bucket: counts },
      text: `Imported ${parsed.questions.length} questions as ${id} for ${org} (${BUCKETS.map((b) => `${b} ${counts[b]}`).join(', ')}). Use it with "svc": {"question_set": "${id}"} on POST /v1/tests.`,
    };
  },
});

export const runCommands: readonly Command[] = [runWatch, runList, runCancel, questionsImport];
