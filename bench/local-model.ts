import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseModelJudgment } from '../domain/classifier';
import { parseJudgment } from '../domain/judge-reply';
import type { ChatMessage } from '../domain/messages';
import { classifierPrompt, judgePrompt } from '../domain/prompts';
import { generateQuestions } from '../domain/questions/generate';
import { classificationSchema, judgmentSchema, runVerdictSchema, type ReplySchema } from '../domain/reply-schemas';
import { answerLabels, readRunVerdict, runJudgePrompt } from '../domain/run-judging';
import { createEngines, type Engines } from '../engines';
import { createLogger } from '../infra/log';
import { ensureLocalModel, LOCAL_ENGINE_ID, LOCAL_MODEL_NAME, localEnginesFile, startLocalModel } from '../stack/local-model';
import { machine, round, writeResults } from './results';
import { loadConfig } from '../infra/config';
import { toolEnv } from '../stack/tool-env';
import { settingsOf } from '../test/harness/settings';

/**
 * Staff on the real local model (issue 27 items 2 and 8): SmolLM2-135M-Instruct on llama.cpp's server, called through
 * our own OpenAI-compatible adapter, as a judge, a run judge and a classifier — each reply asked for once as a JSON
 * schema (structured output) and once as text, and read by the same readers the workflows use. Prints the share of
 * replies readable each way, and the server's generation speed. Asserts nothing; writes bench/results/local-model-*.json.
 */
const N = Number(process.env.BENCH_LOCAL_N ?? 30);
const THREADS = Number(process.env.BENCH_LOCAL_THREADS ?? 1);

interface Task {
  messages: ChatMessage[];
  reply: ReplySchema;
  maxOutputTokens: number;
  read(text: string): boolean;
}

function tasks(): Record<string, Task[]> {
  const questions = generateQuestions(2711, { light: N, medium: 0, hard: 0 }).slice(0, N);
  const judge = questions.map((q): Task => {
    const labels = ['A', 'B', 'C'];
    const answers = [`Final answer: ${q.answer}`, 'I am not sure. Final answer: 0', `Let me think step by step. Final answer: ${q.answer}`];
    return {
      messages: judgePrompt(
        [{ role: 'user', content: q.question }],
        labels.map((label, i) => ({ label, text: answers[i] ?? '' })),
      ),
      reply: judgmentSchema(labels),
      maxOutputTokens: 600,
      read: (text) => parseJudgment(text, labels) !== undefined,
    };
  });
  const runJudge = questions.map((q): Task => {
    const shown = [`Final answer: ${q.answer}`, 'Final answer: 0'];
    return {
      messages: runJudgePrompt('pairwise', q.question, q.answer, shown),
      reply: runVerdictSchema(answerLabels(shown.length)),
      maxOutputTokens: 300,
      read: (text) => readRunVerdict(text, shown.length, 0) !== undefined,
    };
  });
  const classifier = questions.map((q): Task => ({
    messages: classifierPrompt([{ role: 'user', content: q.question }]),
    reply: classificationSchema,
    maxOutputTokens: 200,
    read: (text) => parseModelJudgment(text) !== undefined,
  }));
  return { judge, runJudge, classifier };
}

async function readable(engines: Engines, list: readonly Task[], structured: boolean): Promise<{ readable: number; of: number }> {
  let ok = 0;
  for (const t of list) {
    const r = await engines.call({
      engineId: LOCAL_ENGINE_ID,
      messages: t.messages,
      maxOutputTokens: t.maxOutputTokens,
      reply: structured ? t.reply : undefined,
    });
    if (t.read(r.text)) ok += 1;
  }
  return { readable: ok, of: list.length };
}

async function tokensPerSecond(baseUrl: string): Promise<number> {
  let tokens = 0;
  let ms = 0;
  for (let i = 0; i < 3; i++) {
    const res = await fetch(`${baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: LOCAL_MODEL_NAME,
        messages: [{ role: 'user', content: 'Write a long essay on the history of bridges.' }],
        max_tokens: 256,
      }),
    });
    const body = (await res.json()) as { timings: { predicted_n: number; predicted_ms: number } };
    tokens += body.timings.predicted_n;
    ms += body.timings.predicted_ms;
  }
  return tokens / (ms / 1000);
}

async function main(): Promise<void> {
  const load = os.loadavg();
  const install = ensureLocalModel(toolEnv(loadConfig(), process.env));
  const server = await startLocalModel(install, { threads: THREADS, parallel: 1 });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-bench-local-'));
  try {
    const file = path.join(dir, 'engines.json');
    // The staff's own limits (a judge asks for up to 600 tokens), not the demo's 256-token answers.
    const declared = localEnginesFile(server.baseUrl).engines.map((e) => ({ ...e, max_output_tokens: 1024 }));
    fs.writeFileSync(file, JSON.stringify({ engines: declared }));
    const engines = createEngines({ ...settingsOf({ QUORUM_ENGINES_FILE: file }), logger: createLogger('bench', () => undefined) });
    const rows: Record<string, unknown>[] = [];
    for (const [staff, list] of Object.entries(tasks())) {
      const asText = await readable(engines, list, false);
      const asSchema = await readable(engines, list, true);
      rows.push({
        staff,
        replies: list.length,
        readableAsText: round((100 * asText.readable) / asText.of),
        readableAsSchema: round((100 * asSchema.readable) / asSchema.of),
      });
    }
    const speed = round(await tokensPerSecond(server.baseUrl));
    console.log(`SmolLM2-135M-Instruct (Q4_1) on llama.cpp (xllamacpp), ${THREADS} thread(s): ${speed} tokens/s generated`);
    console.table(
      rows.map((r) => ({ ...r, readableAsText: `${String(r.readableAsText)}%`, readableAsSchema: `${String(r.readableAsSchema)}%` })),
    );
    const out = writeResults('local-model', {
      date: new Date().toISOString(),
      machine: machine(load),
      threads: THREADS,
      tokensPerSecond: speed,
      staff: rows,
    });
    console.log(`written ${out}`);
  } finally {
    await server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
