import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { upsertMode } from '../db/repositories/modes';
import { localDemoMode, type ModeConfig } from '../domain/modes';
import { loadConfig } from '../infra/config';
import { ensureLocalModel, LOCAL_ENGINE_ID, LOCAL_MODEL_NAME, localEnginesFile, startLocalModel } from '../stack/local-model';
import { toolEnv } from '../stack/tool-env';
import { startProductWorkers } from '../test/stack/deliberation/helpers';
import { stack, startStack, stopStack } from '../test/harness/stack';
import { newOrg, startApi } from '../test/stack/api/helpers';
import { machine, round, writeResults } from './results';
import { summary } from './stats';

/**
 * Issue 53 item 4: how soon a streamed response shows its answer, on the real local model (SmolLM2-135M on llama.cpp's
 * own server). `N` responses with `stream: true` through the official `openai` client, one at a time, per shape:
 * the express lane (one seat writes the answer), a panel whose synthesis writes it (three seats, a judge, the
 * synthesis), and the local demo panel as it ships (the seats vote; the winning seat's text is the answer, sent once
 * chosen). For each: time from the create to the first `response.output_text.delta`, and to `response.completed` (or
 * `response.incomplete`, an answer cut by its limit: the whole answer, the call ended). Beside them, the floor: the same prompt streamed from the model server directly (its
 * own first token and last). Asserts nothing; writes bench/results/answer-stream-*.json.
 */
const N = Number(process.env.BENCH_ANSWER_STREAM_N ?? 5);
const PROMPT = 'Explain in three sentences why the sky is blue.';
/** The seats' output limit in the local demo mode: the direct call is asked for the same. */
const MAX_TOKENS = 128;

interface Timing {
  firstMs: number;
  wholeMs: number;
  deltas: number;
}

/** One streamed response: when its first answer delta and its completion arrived, from the create. */
async function streamed(openai: OpenAI, model: string, i: number): Promise<Timing> {
  const started = performance.now();
  let firstMs = NaN;
  let deltas = 0;
  const stream = await openai.responses.create({ model, input: `${PROMPT} (${i})`, stream: true });
  for await (const e of stream) {
    if (e.type === 'response.output_text.delta') {
      if (deltas++ === 0) firstMs = performance.now() - started;
    }
    // Incomplete: the whole answer came, cut by its output limit (a small model often writes to it).
    if (e.type === 'response.completed' || e.type === 'response.incomplete')
      return { firstMs, wholeMs: performance.now() - started, deltas };
    if (e.type === 'response.failed' || e.type === 'error') throw new Error(`${model}: ${JSON.stringify(e)}`);
  }
  throw new Error(`${model}: the stream ended without its response`);
}

/** The floor: the model server's own stream of the same prompt (its first token, its last). */
async function direct(openai: OpenAI, model: string, i: number): Promise<Timing> {
  const started = performance.now();
  let firstMs = NaN;
  let deltas = 0;
  const stream = await openai.chat.completions.create({
    model,
    messages: [{ role: 'user', content: `${PROMPT} (${i})` }],
    max_tokens: MAX_TOKENS,
    stream: true,
  });
  for await (const chunk of stream) if (chunk.choices[0]?.delta.content && deltas++ === 0) firstMs = performance.now() - started;
  return { firstMs, wholeMs: performance.now() - started, deltas };
}

interface Shape {
  name: string;
  /** How its answer is written. */
  writer: string;
  run(i: number): Promise<Timing>;
}

function figures(times: Timing[]): Record<string, number> {
  const first = summary(times.map((t) => t.firstMs));
  const whole = summary(times.map((t) => t.wholeMs));
  return {
    n: times.length,
    firstP50Ms: round(first.p50, 0),
    wholeP50Ms: round(whole.p50, 0),
    firstMaxMs: round(first.max, 0),
    wholeMinMs: round(Math.min(...times.map((t) => t.wholeMs)), 0),
    deltasP50: summary(times.map((t) => t.deltas)).p50,
    firstBeforeWholeMs: round(whole.p50 - first.p50, 0),
  };
}

async function main(): Promise<void> {
  const loadAtStart = os.loadavg();
  const date = new Date().toISOString();
  const tools = toolEnv(loadConfig(), process.env);
  const server = await startLocalModel(ensureLocalModel(tools), { threads: 2, parallel: 4 });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-answer-stream-'));
  const enginesFile = path.join(dir, 'engines.json');
  fs.writeFileSync(enginesFile, JSON.stringify(localEnginesFile(server.baseUrl)));
  const env = { ...process.env, QUORUM_ENGINES_FILE: enginesFile, QUORUM_ENGINE_TIMEOUT_MS: '180000' };
  await startStack();
  const stops: (() => Promise<unknown>)[] = [() => server.stop(), () => stopStack()];
  const results: Record<string, unknown> = {};
  try {
    const workers = await startProductWorkers(env);
    stops.unshift(() => workers.stop());
    const api = await startApi('B', { env });
    stops.unshift(() => api.close());
    const org = await newOrg(100);
    const seed = localDemoMode({ idPrefix: 'answer-stream', company: 'ASTR' }, LOCAL_ENGINE_ID);
    const variant = async (suffix: string, config: ModeConfig): Promise<string> => {
      const ticker = `ASTR:${suffix}`;
      await upsertMode(stack().db, {
        ...seed,
        id: `${seed.id}-${suffix.toLowerCase()}`,
        ticker,
        config,
        orgId: org.orgId,
        published: true,
      });
      return ticker;
    };
    // Without its vote the mode's synthesis writes the answer (an absent key: the mode's hash is of its stored JSON).
    const unvoted: ModeConfig = structuredClone(seed.config);
    delete unvoted.aggregation;
    const express = await variant('EXPR', { ...unvoted, express: 'always' });
    const synthesis = await variant('SYNT', unvoted);
    const voted = await variant('LOCL', seed.config);
    const openai = new OpenAI({ baseURL: `${api.url}/v1`, apiKey: org.ownerKey, maxRetries: 0, timeout: 600_000 });
    const model = new OpenAI({ baseURL: server.baseUrl, apiKey: 'none', maxRetries: 0, timeout: 600_000 });
    const shapes: Shape[] = [
      {
        name: 'the model server alone',
        writer: 'llama.cpp streaming the prompt directly (the floor)',
        run: (i) => direct(model, LOCAL_MODEL_NAME, i),
      },
      { name: 'express lane', writer: 'the one seat, as it writes', run: (i) => streamed(openai, express, i) },
      {
        name: 'panel, synthesis',
        writer: 'three seats, a judge, then the synthesis, as it writes',
        run: (i) => streamed(openai, synthesis, i),
      },
      {
        name: 'panel, vote (LOCL)',
        writer: 'the seats vote; the winning seat’s text, once chosen',
        run: (i) => streamed(openai, voted, i),
      },
    ];
    // One warm-up each (the model's first prompt, the workflow bundle's first run), not counted.
    for (const s of shapes) await s.run(-1);
    console.log(`${N} streamed responses a shape, one at a time, on ${LOCAL_ENGINE_ID} (SmolLM2-135M, llama.cpp, 2 threads)`);
    console.log('shape                     first answer token p50   whole answer p50   first before whole   deltas p50');
    for (const s of shapes) {
      const times: Timing[] = [];
      for (let i = 0; i < N; i++) times.push(await s.run(i));
      const f = figures(times);
      results[s.name] = { ...f, writer: s.writer };
      console.log(
        `${s.name.padEnd(26)}${`${(f.firstP50Ms / 1000).toFixed(2)} s`.padStart(12)}${`${(f.wholeP50Ms / 1000).toFixed(2)} s`.padStart(20)}${`${(f.firstBeforeWholeMs / 1000).toFixed(2)} s`.padStart(21)}${String(f.deltasP50).padStart(13)}`,
      );
    }
  } finally {
    for (const stop of stops) await stop();
  }
  writeResults('answer-stream', {
    date,
    command: 'npm run bench:answer-stream',
    machine: machine(loadAtStart),
    notes: `in process: API, worker, the Temporal dev server and Postgres; llama.cpp's server (xllamacpp) with SmolLM2-135M, 2 threads, 4 slots; ${N} calls a shape one at a time; times from the create to the first output_text.delta and to response.completed, read by the official openai client`,
    figures: results,
  });
}

main().catch(async (err: unknown) => {
  console.error(err);
  await stopStack();
  process.exit(1);
});
