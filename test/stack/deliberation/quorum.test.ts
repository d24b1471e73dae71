import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { JUDGE_TAG, SYNTHESIS_TAG } from '../../../domain/prompts';
import { workflowIds } from '../../../domain/workflow-ids';
import {
  OPENAI_TEST_KEY,
  openAiError,
  openAiReply,
  startOpenAiLoopback,
  type Loopback,
  type RecordedRequest,
  type Reply,
} from '../../fixtures/providers';
import { call, newOrg, startApi, USER, type Api } from '../api/helpers';
import { customMode, recordHistory, startProductWorkers } from './helpers';
import { randomUUID } from 'node:crypto';
import { TASK_QUEUES } from '../../../workflows/task-queues';
import { until } from '../../harness/faults';
import { stack } from '../../harness/stack';
import { testWorker } from '../../harness/worker';
import { scopedQuorumWorkflow } from '../../fixtures/quorum-workflow';

/**
 * A quorum instead of a wait for the slowest (issue 40 item 6): a panel whose third seat answers 10 s after the others
 * is judged once two seats have answered and the grace has passed; the slow seat's request is cancelled on the wire,
 * billed one reading of its prompt and no output (docs/money.md), and its receipt row and `late_seats` say why. Every
 * expected figure is computed here from what the loopback recorded, at the published prices.
 */
const SLOW_MS = 10_000;
const GRACE_MS = 1_500;
/** USD per million tokens (= micro-dollars per token): the catalog's gpt-4.1 and gpt-4.1-mini, and the slow engine's own. */
const PRICES: Record<string, { input: number; output: number }> = {
  'gpt-4.1': { input: 2, output: 8 },
  'gpt-4.1-mini': { input: 0.4, output: 1.6 },
  slow: { input: 3, output: 12 },
};
/** What every answered call reports: the provider's own counts. */
const SERVED = { prompt: 100, completion: 20 };
/** quorum-panel's Form B mode fee: $0.5 per Mtok in, output at 4x. */
const MODE_FEE = { input: 0.5, output: 2 };

const model = (req: RecordedRequest): string => (req.body as { model: string }).model;
const micros = (usd: number): number => Math.round(usd * 1_000_000);
const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0);

/**
 * The prompt of a request as the provider received it, counted as docs/money.md says a late seat is billed: the
 * o200k_base tokens of each message's content, 4 per message for its framing, 3 to prime the reply.
 */
function promptTokensOf(req: RecordedRequest): number {
  const messages = (req.body as { messages: { content: string }[] }).messages;
  return 3 + sum(messages.map((m) => 4 + encode(m.content).length));
}

/** In a prompt: the seats on OpenAI's models fail for good (400), so only the slow seat can answer. */
const FAST_SEATS_FAIL = '[[fast-seats-fail]]';
/** In a prompt: the slow seat answers round 1 at once and is slow only in the critique round. */
const SLOW_IN_CRITIQUE = '[[slow-in-critique]]';
const CRITIQUE = 'Other panelists answered';

function script(req: RecordedRequest): Reply {
  const counts = { promptTokens: SERVED.prompt, completionTokens: SERVED.completion };
  if (req.bodyText.includes(JUDGE_TAG)) {
    const labels = [...new Set([...req.bodyText.matchAll(/Answer ([A-C]):/g)].map((m) => m[1]))];
    const verdict = {
      scores: Object.fromEntries(labels.map((l) => [l, 8])),
      best: labels[0],
      why: 'Complete.',
      divergence: 0.1,
      converged: true,
    };
    return openAiReply({ text: JSON.stringify(verdict), ...counts });
  }
  if (req.bodyText.includes(SYNTHESIS_TAG)) return openAiReply({ text: 'The panel agrees: Rayleigh scattering.', ...counts });
  if (model(req) !== 'slow')
    return req.bodyText.includes(FAST_SEATS_FAIL)
      ? openAiError(400, 'This request is refused.')
      : openAiReply({ text: `${model(req)}: Rayleigh scattering.`, ...counts });
  const reply = openAiReply({ text: 'slow: Rayleigh scattering.', ...counts });
  const slow = !req.bodyText.includes(SLOW_IN_CRITIQUE) || req.bodyText.includes(CRITIQUE);
  return slow ? { ...reply, delayMs: SLOW_MS } : reply;
}

/** A third seat of its own family on the same loopback, slower than the others by SLOW_MS. */
function enginesFile(baseUrl: string): string {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-late-')), 'engines.json');
  const slow = {
    id: 'local/slow',
    protocol: 'openai',
    base_url: baseUrl,
    api_key_env: 'QUORUM_TEST_SLOW_KEY',
    model: 'slow',
    tier: 'plus',
    input_usd_per_mtok: PRICES.slow.input,
    output_usd_per_mtok: PRICES.slow.output,
    context_tokens: 8_192,
    max_output_tokens: 1_024,
    backup: 'openai/gpt-4.1-mini',
  };
  fs.writeFileSync(file, JSON.stringify({ engines: [slow] }));
  return file;
}

interface SeatRow {
  role: string;
  model_used: string;
  round_number: number;
  tokens_in: number;
  tokens_out: number;
  real_cost_usd: number;
  late?: string;
}

interface Receipt {
  billed_usd: number;
  prompt_tokens: number;
  completion_tokens: number;
  seat_count: number;
  charges: { gateway_usd: number; platform_fee_usd: number; mode_fee_usd: number };
  seats: SeatRow[];
  seats_unavailable: { role: string; reason: string }[];
  late_seats?: { role: string; round: number; model_used: string; reason: string }[];
}

describe('a quorum: the round is judged after the grace, the late seat cancelled and billed what it used', function () {
  this.timeout(120_000);
  let openai: Loopback;
  let workers: { stop(): Promise<void> };
  let api: Api;
  let file: string;

  before(async () => {
    openai = await startOpenAiLoopback(script);
    file = enginesFile(openai.baseUrl);
    workers = await startProductWorkers({
      QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY,
      QUORUM_OPENAI_BASE_URL: openai.baseUrl,
      QUORUM_ENGINES_FILE: file,
      QUORUM_TEST_SLOW_KEY: OPENAI_TEST_KEY,
    });
    api = await startApi('B');
  });
  after(async () => {
    await api.close();
    await workers.stop();
    await openai.close();
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  });

  interface Answered {
    ms: number;
    svc: { seats: number; seats_answered: number; request_id: string; late_seats?: { role: string; round: number }[] };
    receipt: Receipt;
    requests: RecordedRequest[];
  }

  /** One Form B call through the API of a panel of gpt-4.1, gpt-4.1-mini and the slow seat, quorum 2 with GRACE_MS. */
  async function quorumCall(content: string, rounds: number, history: string): Promise<Answered> {
    const org = await newOrg(10);
    const mode = await customMode(org.orgId, 'quorum-panel', {
      tiers: {
        experience: { seats: ['openai/gpt-4.1-mini'] },
        plus: { seats: ['openai/gpt-4.1', 'openai/gpt-4.1-mini', 'local/slow'] },
      },
      staff: { judge: { engine: 'openai/gpt-4.1' }, synthesis: { engine: 'openai/gpt-4.1' } },
      rounds,
      critique: rounds > 1 ? 'always' : 'never',
      grounding: 'off',
      express: 'never',
      skipSynthesisWhenConverged: false,
      quorum: { seats: 2, graceMs: GRACE_MS },
    });
    const seen = openai.requests.length;
    const idempotencyKey = `${history}-${org.orgId}`;
    const started = Date.now();
    const r = await call(api, 'POST', '/v1/chat/completions', {
      key: org.ownerKey,
      body: { model: mode.ticker, messages: USER(content) },
      headers: { 'Idempotency-Key': idempotencyKey },
    });
    const ms = Date.now() - started;
    await recordHistory(history, workflowIds.deliberation(org.orgId, idempotencyKey));
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const svc = r.body.svc as unknown as Answered['svc'];
    const got = await call(api, 'GET', `/v1/receipts/${svc.request_id}`, { key: org.ownerKey });
    assert.equal(got.status, 200, JSON.stringify(got.body));
    const receipt = (got.body as unknown as { receipt: Receipt }).receipt;
    return { ms, svc, receipt, requests: openai.requests.slice(seen) };
  }

  it('quorum 2 of 3, one seat 10 s slower: answered after the grace; the slow seat is late, cancelled, billed its input only', async () => {
    const { ms, svc, receipt, requests } = await quorumCall('Why is the sky blue? Explain it briefly.', 1, 'quorum-late-seat');
    const slow = requests.find((q) => model(q) === 'slow');
    assert.ok(slow, 'the slow seat was asked');
    const fast = requests.filter((q) => model(q) !== 'slow' && !q.bodyText.includes(JUDGE_TAG) && !q.bodyText.includes(SYNTHESIS_TAG));
    assert.equal(fast.length, 2, 'two fast seats');
    const judge = requests.find((q) => q.bodyText.includes(JUDGE_TAG));
    assert.ok(judge, 'the round was judged');
    // The fast seats are answered as soon as they arrive: the quorum's second answer is the later of them.
    const quorumAt = Math.max(...fast.map((q) => q.receivedAt));
    assert.ok(judge.receivedAt - quorumAt >= GRACE_MS, `judged ${judge.receivedAt - quorumAt} ms after the quorum, within the grace`);
    assert.ok(slow.abortedAt !== undefined, 'the slow request was cancelled on the wire');
    assert.ok(slow.abortedAt - quorumAt >= GRACE_MS, `cancelled ${slow.abortedAt - quorumAt} ms after the quorum`);
    assert.ok(slow.abortedAt - slow.receivedAt < SLOW_MS, 'cancelled before it would have answered');
    assert.ok(ms < SLOW_MS, `answered in ${ms} ms, not after the slowest seat`);

    assert.deepEqual([svc.seats, svc.seats_answered], [3, 2]);
    assert.deepEqual(
      svc.late_seats?.map((s) => s.role),
      ['seat3'],
    );

    // The late seat's row: one reading of the prompt the slow engine received, no output, at its input price.
    const lateTokens = promptTokensOf(slow);
    const lateRow = receipt.seats.find((s) => s.role === 'seat3');
    assert.ok(lateRow?.late, 'the slow seat has a row saying it was late');
    assert.deepEqual(
      [lateRow.model_used, lateRow.round_number, lateRow.tokens_in, lateRow.tokens_out, micros(lateRow.real_cost_usd)],
      ['local/slow', 1, lateTokens, 0, Math.ceil(lateTokens * PRICES.slow.input)],
    );
    assert.match(lateRow.late, /late, cancelled: 2 of 3 seats had answered and the 1500 ms grace had passed/);
    assert.deepEqual(
      receipt.late_seats?.map((s) => [s.role, s.round, s.model_used]),
      [['seat3', 1, 'local/slow']],
    );
    assert.match(receipt.seats_unavailable.find((u) => u.role === 'seat3')?.reason ?? '', /^local\/slow: late, cancelled/);

    // The bill: every answered call at the provider's own counts, plus the late seat's input; fee and mode fee on them.
    const answered = requests.filter((q) => q !== slow);
    assert.equal(answered.length, 4, 'two seats, a judge, a synthesis');
    const engines = sum(answered.map((q) => SERVED.prompt * PRICES[model(q)].input + SERVED.completion * PRICES[model(q)].output));
    const lateCost = Math.ceil(lateTokens * PRICES.slow.input);
    const tokensIn = answered.length * SERVED.prompt + lateTokens;
    const tokensOut = answered.length * SERVED.completion;
    assert.deepEqual([receipt.prompt_tokens, receipt.completion_tokens], [tokensIn, tokensOut]);
    assert.equal(micros(receipt.charges.gateway_usd), engines + lateCost);
    assert.equal(micros(receipt.charges.platform_fee_usd), Math.round((engines + lateCost) / 20));
    assert.equal(micros(receipt.charges.mode_fee_usd), Math.ceil(tokensIn * MODE_FEE.input + tokensOut * MODE_FEE.output));
  });

  it('a critique round: the seat slow only there is late in round 2; it answered round 1, so seats_answered stays 3', async () => {
    const { ms, svc, receipt, requests } = await quorumCall(`Why is the sky blue? ${SLOW_IN_CRITIQUE}`, 2, 'quorum-late-critique');
    assert.ok(ms < SLOW_MS, `answered in ${ms} ms`);
    assert.deepEqual([svc.seats, svc.seats_answered], [3, 3]);
    assert.deepEqual(
      svc.late_seats?.map((s) => [s.role, s.round]),
      [['seat3', 2]],
    );
    const slow = requests.filter((q) => model(q) === 'slow');
    assert.equal(slow.length, 2, 'asked in both rounds');
    assert.equal(slow[0].abortedAt, undefined, 'round 1 answered');
    assert.ok(slow[1].abortedAt !== undefined, "round 2's request was cancelled on the wire");
    const judges = requests.filter((q) => q.bodyText.includes(JUDGE_TAG));
    assert.equal(judges.length, 2);
    // Round 2 was judged on the two answers it had.
    assert.deepEqual([...new Set([...judges[1].bodyText.matchAll(/Answer ([A-C]):/g)].map((m) => m[1]))].sort(), ['A', 'B']);
    const row = receipt.seats.find((s) => s.role === 'seat3' && s.round_number === 2);
    assert.ok(row?.late);
    assert.deepEqual([row.tokens_in, row.tokens_out], [promptTokensOf(slow[1]), 0]);
    assert.equal(receipt.seats_unavailable.length, 0, 'every seat answered round 1');
  });

  it('fewer than the quorum can answer (two seats fail for good): the slow seat is waited for, as without a quorum', async () => {
    const { ms, svc, receipt, requests } = await quorumCall(`Why is the sky blue? ${FAST_SEATS_FAIL}`, 1, 'quorum-below');
    assert.ok(ms >= SLOW_MS, `answered in ${ms} ms: the slow seat was waited for`);
    assert.deepEqual([svc.seats, svc.seats_answered], [3, 1]);
    assert.equal(svc.late_seats, undefined);
    const slow = requests.find((q) => model(q) === 'slow');
    assert.equal(slow?.abortedAt, undefined, 'answered, not cancelled');
    assert.ok(receipt.seats.every((s) => !s.late));
  });

  it("a run's questions (ordinary activities): the grace is a timer, the late call cancelled through Temporal and reported late", async () => {
    const { worker, taskQueue } = await testWorker(path.join(__dirname, '..', '..', 'fixtures', 'quorum-workflow.ts'), {});
    const running = worker.run();
    try {
      const seen = openai.requests.length;
      const started = Date.now();
      const answers = await stack().env.client.workflow.execute(scopedQuorumWorkflow, {
        taskQueue,
        workflowId: `quorum-test/${randomUUID()}`,
        args: [
          {
            engineIds: ['openai/gpt-4.1', 'openai/gpt-4.1-mini', 'local/slow'],
            activityQueue: TASK_QUEUES.deliberation,
            quorum: 2,
            graceMs: GRACE_MS,
          },
        ],
      });
      const ms = Date.now() - started;
      assert.deepEqual(answers, ['gpt-4.1: Rayleigh scattering.', 'gpt-4.1-mini: Rayleigh scattering.', 'late']);
      assert.ok(ms < SLOW_MS, `settled in ${ms} ms`);
      const slow = openai.requests.slice(seen).find((q) => model(q) === 'slow');
      await until(() => slow?.abortedAt !== undefined, 5_000, 'the late request was aborted on the wire');
    } finally {
      worker.shutdown();
      await running;
    }
  });
});
