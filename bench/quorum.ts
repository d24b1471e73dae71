import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { canonicalHash } from '../domain/canonical-json';
import { callCeilingMicros } from '../domain/fees';
import type { ModeConfig, ModeRecord } from '../domain/modes';
import type { Outcome } from '../domain/outcome';
import { JUDGE_TAG, SYNTHESIS_TAG } from '../domain/prompts';
import { simLatencyMs } from '../domain/sim-latency';
import { countMessagesTokens, warmTokenizer } from '../domain/tokens';
import { findMode, upsertMode } from '../db/repositories/modes';
import { createOrganisation } from '../db/repositories/organisations';
import { conductDeliberation } from '../operations/deliberation';
import { OPENAI_TEST_KEY, openAiReply, startOpenAiLoopback, type RecordedRequest, type Reply } from '../test/fixtures/providers';
import { stack, startStack, stopStack } from '../test/harness/stack';
import { uniqueTicker } from '../test/harness/unique';
import { machine, round, writeResults } from './results';
import { summary } from './stats';
import { pool } from './pool';
import { startBenchWorkers } from './workers';

/**
 * Issue 40 item 6: how much of a panel's tail a quorum removes when one seat is slow. Three seats on a loopback
 * provider: two draw their latency from the spec's log-normal (p50 28.5 s, p99 229 s) sped up `SPEEDUP` times, the
 * third from the same shape 3x slower; judge and synthesis answer in `STAFF_MS`. Each question's draws are a hash of
 * its text and the seat, so every arm meets the same engine latencies (a paired comparison). Arms: every seat waited
 * for, then quorum 2 with each grace. Prints end-to-end p50/p90/p99 per arm; asserts nothing.
 */
const CALLS = Number(process.env.BENCH_QUORUM_CALLS ?? 200);
const CONCURRENCY = 16;
const SPEEDUP = Number(process.env.BENCH_QUORUM_SPEEDUP ?? 20);
const SLOW_FACTOR = 3;
const STAFF_MS = 100;
const GRACES_MS = [0, 1_000, 3_000];
const PROMPT = 'prove step by step why the sum of two odd numbers is even, and compare two approaches to caching. Why? How?';

/** Two uniforms in (0, 1) from a hash of the seat's model and the question, so a question's seat is as slow in every arm. */
function uniforms(text: string): [number, number] {
  const digest = createHash('sha256').update(text).digest();
  const u = (offset: number): number => (digest.readUInt32BE(offset) + 1) / 4_294_967_297;
  return [u(0), u(4)];
}

function script(req: RecordedRequest): Reply {
  const model = (req.body as { model: string }).model;
  if (req.bodyText.includes(JUDGE_TAG)) {
    const labels = [...new Set([...req.bodyText.matchAll(/Answer ([A-C]):/g)].map((m) => m[1]))];
    const verdict = {
      scores: Object.fromEntries(labels.map((l) => [l, 8])),
      best: labels[0],
      why: 'Complete.',
      divergence: 0.1,
      converged: true,
    };
    return { ...openAiReply({ text: JSON.stringify(verdict), promptTokens: 300, completionTokens: 40 }), delayMs: STAFF_MS };
  }
  if (req.bodyText.includes(SYNTHESIS_TAG))
    return { ...openAiReply({ text: 'Synthesis.', promptTokens: 400, completionTokens: 90 }), delayMs: STAFF_MS };
  const [u1, u2] = uniforms(`${model}\n${lastUser(req)}`);
  const ms = simLatencyMs({ kind: 'spec', speedup: SPEEDUP }, u1, u2) * (model === 'slow' ? SLOW_FACTOR : 1);
  return { ...openAiReply({ text: `${model}: the sum is even.`, promptTokens: 100, completionTokens: 60 }), delayMs: ms };
}

function lastUser(req: RecordedRequest): string {
  const messages = (req.body as { messages: { role: string; content: string }[] }).messages;
  return messages.filter((m) => m.role === 'user').at(-1)?.content ?? '';
}

function enginesFile(baseUrl: string): string {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'bench-quorum-')), 'engines.json');
  const slow = {
    id: 'local/slow',
    protocol: 'openai',
    base_url: baseUrl,
    api_key_env: 'BENCH_SLOW_KEY',
    model: 'slow',
    tier: 'plus',
    input_usd_per_mtok: 2,
    output_usd_per_mtok: 8,
    context_tokens: 8_192,
    max_output_tokens: 1_024,
    backup: 'openai/gpt-4.1-mini',
  };
  fs.writeFileSync(file, JSON.stringify({ engines: [slow] }));
  return file;
}

async function modeFor(orgId: string, quorum: ModeConfig['quorum'], n: number): Promise<ModeRecord> {
  const base = (await findMode(stack().db, { orgId: 'none', form: 'A', model: 'quorum-panel' })) as ModeRecord;
  return upsertMode(stack().db, {
    id: `bench-quorum-${n}-${randomUUID().slice(0, 8)}`,
    ticker: uniqueTicker('QRMB'),
    orgId,
    name: `Bench quorum ${n}`,
    description: null,
    useWhen: base.useWhen,
    published: true,
    config: {
      ...base.config,
      tiers: { experience: { seats: ['openai/gpt-4.1-mini'] }, plus: { seats: ['openai/gpt-4.1', 'openai/gpt-4.1-mini', 'local/slow'] } },
      staff: { judge: { engine: 'openai/gpt-4.1' }, synthesis: { engine: 'openai/gpt-4.1' } },
      rounds: 1,
      critique: 'never',
      grounding: 'off',
      express: 'never',
      skipSynthesisWhenConverged: false,
      ...(quorum && { quorum }),
    },
  });
}

/** One call's wall time and outcome, or why it failed (counted and printed, never fatal to the bench). */
type Sample = { ms: number; outcome: Outcome } | { ms: number; error: string };

async function deliberate(orgId: string, keyId: string, mode: ModeRecord, i: number): Promise<Sample> {
  const messages = [{ role: 'user' as const, content: `Question ${i}: ${PROMPT}` }];
  const t = performance.now();
  try {
    const { outcome } = await conductDeliberation(
      { db: stack().db, client: stack().env.client },
      {
        orgId,
        apiKeyId: keyId,
        keyKind: 'live',
        idempotencyKey: randomUUID(),
        fingerprint: canonicalHash(messages),
        form: 'B',
        mode,
        model: mode.ticker,
        tier: 'plus',
        messages,
        promptTokens: countMessagesTokens(messages),
        ceilingMicros: callCeilingMicros('B', mode.config, undefined, undefined),
      },
    );
    return { ms: performance.now() - t, outcome };
  } catch (err) {
    return { ms: performance.now() - t, error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) };
  }
}

async function main(): Promise<void> {
  const loadAtStart = os.loadavg();
  const date = new Date().toISOString();
  warmTokenizer();
  const openai = await startOpenAiLoopback(script);
  const file = enginesFile(openai.baseUrl);
  await startStack();
  const { db } = stack();
  const engineEnv = {
    QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY,
    QUORUM_OPENAI_BASE_URL: openai.baseUrl,
    QUORUM_ENGINES_FILE: file,
    BENCH_SLOW_KEY: OPENAI_TEST_KEY,
  };
  const workers = await startBenchWorkers({ env: engineEnv });
  const org = await createOrganisation(db, { name: 'Bench quorum', creditMicros: 100_000_000_000n });
  const arms: { name: string; quorum: ModeConfig['quorum'] }[] = [
    { name: 'every seat waited for', quorum: undefined },
    ...GRACES_MS.map((graceMs) => ({ name: `quorum 2 of 3, grace ${graceMs} ms`, quorum: { seats: 2, graceMs } })),
  ];
  const figures: Record<string, unknown> = {};
  console.log(
    `${CALLS} panel calls per arm at ${CONCURRENCY} concurrent; seats: the spec's latency / ${SPEEDUP}, one seat ${SLOW_FACTOR}x slower; staff ${STAFF_MS} ms`,
  );
  try {
    const warm = await modeFor(org.orgId, undefined, arms.length);
    await pool(8, 4, (i) => deliberate(org.orgId, org.keyId, warm, -1 - i));
    for (const [n, arm] of arms.entries()) {
      const mode = await modeFor(org.orgId, arm.quorum, n);
      const samples = await pool(CALLS, CONCURRENCY, (i) => deliberate(org.orgId, org.keyId, mode, i));
      const outcomes = samples.flatMap((x) => ('outcome' in x ? [x.outcome] : []));
      const failed = samples.flatMap((x) => ('error' in x ? [x.error] : []));
      const s = summary(samples.map((x) => x.ms));
      const late = outcomes.filter((o) => o.seatPasses.some((p) => p.late)).length;
      const billed = summary(outcomes.map((o) => o.money.billedMicros));
      figures[arm.name] = { ...s, lateShare: round(late / CALLS, 3), billedMicrosP50: billed.p50, failed: failed.length };
      if (failed.length > 0) console.log(`  ${failed.length} calls failed; the first: ${failed[0]}`);
      const sec = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
      console.log(
        `${arm.name.padEnd(30)} p50 ${sec(s.p50)}  p90 ${sec(s.p90)}  p99 ${sec(s.p99)}  max ${sec(s.max)}  late seat in ${((100 * late) / CALLS).toFixed(0)}% of calls  billed p50 ${billed.p50} µ$`,
      );
    }
  } finally {
    await workers.stop();
    await stopStack();
    await openai.close();
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  }
  writeResults('quorum', {
    date,
    command: 'node --import tsx bench/quorum.ts',
    machine: machine(loadAtStart),
    notes: `in process: conductDeliberation against the real Temporal dev server and Postgres; seats on a loopback provider (spec latency / ${SPEEDUP}, one seat ${SLOW_FACTOR}x slower), staff ${STAFF_MS} ms`,
    figures,
  });
}

main().catch(async (err: unknown) => {
  console.error(err);
  await stopStack();
  process.exit(1);
});
