import assert from 'node:assert/strict';
import { CLASSIFY_TAG, JUDGE_TAG, SYNTHESIS_TAG } from '../../../domain/prompts';
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
import { call, newOrg, startApi, type Api } from '../api/helpers';
import { customMode, recordHistory, startProductWorkers } from './helpers';

/**
 * Receipts that add up (issue 27 item 7): in a two-round panel only the row whose answer won is the best seat's, and a
 * seat whose cut answer was retried with more room carries both attempts, so the seat rows and the staff calls account
 * for the call's tokens and its bill. Every expected figure is computed here from what the loopback served, at the
 * published prices (docs/money.md), not by the code under test.
 */
const SEAT_MAX = 200;
/** Published prices, USD per million tokens (= micro-dollars per token). */
const PRICES: Record<string, { input: number; output: number }> = {
  'gpt-4.1': { input: 2, output: 8 },
  'gpt-4.1-mini': { input: 0.4, output: 1.6 },
};
/** The panel's Form B mode fee: $0.5 per Mtok in, output at 4x. */
const MODE_FEE = { input: 0.5, output: 2 };

const CRITIQUE = 'Other panelists answered';

function maxOut(req: RecordedRequest): number {
  const b = req.body as { max_tokens?: number; max_completion_tokens?: number };
  return b.max_tokens ?? b.max_completion_tokens ?? 0;
}

function model(req: RecordedRequest): string {
  return (req.body as { model: string }).model;
}

type Kind = 'classifier' | 'judge' | 'synthesis' | 'seat';

function kindOf(req: RecordedRequest): Kind {
  if (req.bodyText.includes(CLASSIFY_TAG)) return 'classifier';
  if (req.bodyText.includes(JUDGE_TAG)) return 'judge';
  if (req.bodyText.includes(SYNTHESIS_TAG)) return 'synthesis';
  return 'seat';
}

/**
 * What each call served, chosen so every cost is a whole number of micro-dollars: the large model's first answer in
 * round 1 is cut at 16 tokens (`length`), its retry with twice the room answers in 32.
 */
function usageOf(req: RecordedRequest): { prompt: number; completion: number; finish: 'stop' | 'length' } {
  const kind = kindOf(req);
  if (kind === 'judge') return { prompt: 300, completion: 40, finish: 'stop' };
  if (kind === 'synthesis') return { prompt: 400, completion: 90, finish: 'stop' };
  if (kind === 'classifier') return { prompt: 50, completion: 10, finish: 'stop' };
  const firstRound = !req.bodyText.includes(CRITIQUE);
  if (model(req) === 'gpt-4.1' && firstRound)
    return maxOut(req) === SEAT_MAX ? { prompt: 100, completion: 16, finish: 'length' } : { prompt: 100, completion: 32, finish: 'stop' };
  return { prompt: 100, completion: 40, finish: 'stop' };
}

/**
 * Seats say which model they are and which round; the judge prefers the large model in round 1 and the small one in
 * round 2, so the small model's seat wins with its round-2 answer after scoring lowest in round 1.
 */
/** Marks a prompt the classifier model calls easy (the express lane, where the mode allows it). */
const EASY = '[[easy]]';

/** What the classifier model says: a hard reasoning question, or an easy one when marked; no search either way. */
function classifierVerdict(req: RecordedRequest): string {
  const difficulty = req.bodyText.includes(EASY) ? 0.1 : 0.8;
  return JSON.stringify({ difficulty, task_type: 'reasoning', hallucination_risk: 'low', needs_search: false });
}

/** Marks a call whose cut seat's retry is refused for good (400): the cut answer was billed all the same. */
const RETRY_REFUSED = '[[retry-refused]]';

function script(req: RecordedRequest): Reply {
  const { prompt, completion, finish } = usageOf(req);
  const kind = kindOf(req);
  if (kind === 'seat' && req.bodyText.includes(RETRY_REFUSED) && maxOut(req) > SEAT_MAX)
    return openAiError(400, 'max_tokens is too large for this model.');
  if (kind === 'judge') {
    const shown = (req.body as { messages: { content: string }[] }).messages.map((m) => m.content).join('\n');
    const answers = [...shown.matchAll(/Answer ([A-C]):\s*(\w+) (\w+)/g)].map((m) => ({ label: m[1], round: m[2], size: m[3] }));
    const labels = [...new Map(answers.map((a) => [a.label, a])).values()];
    const preferred = labels[0]?.round === 'Revised' ? 'small' : 'large';
    const scores = Object.fromEntries(labels.map((a) => [a.label, a.size === preferred ? 9 : 4]));
    const best = labels.find((a) => a.size === preferred)?.label;
    const verdict = { scores, best, why: 'Complete.', divergence: 0.6, converged: false };
    return openAiReply({ text: JSON.stringify(verdict), promptTokens: prompt, completionTokens: completion });
  }
  if (kind === 'classifier') return openAiReply({ text: classifierVerdict(req), promptTokens: prompt, completionTokens: completion });
  if (kind === 'synthesis') return openAiReply({ text: 'Synthesis of the panel.', promptTokens: prompt, completionTokens: completion });
  const size = model(req) === 'gpt-4.1' ? 'large' : 'small';
  const round = req.bodyText.includes(CRITIQUE) ? 'Revised' : 'First';
  return openAiReply({ text: `${round} ${size} model: Rayleigh scattering.`, finish, promptTokens: prompt, completionTokens: completion });
}

interface SeatRow {
  role: string;
  model_used: string;
  round_number: number;
  is_best_seat: boolean;
  tokens_in: number;
  tokens_out: number;
  real_cost_usd: number;
  fee_usd: number;
}

interface Receipt {
  billed_usd: number;
  prompt_tokens: number;
  completion_tokens: number;
  charges: { gateway_usd: number; platform_fee_usd: number; mode_fee_usd: number };
  seats: SeatRow[];
  staff: { classifier: { model_used: string; tokens_in: number; tokens_out: number; real_cost_usd: number } | null };
  difficulty_score: number;
}

const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0);
const micros = (usd: number): number => Math.round(usd * 1_000_000);

describe('receipts that add up: the one best row, and every billed attempt on its seat row', function () {
  this.timeout(120_000);
  let openai: Loopback;
  let workers: { stop(): Promise<void> };
  let api: Api;

  before(async () => {
    openai = await startOpenAiLoopback(script);
    workers = await startProductWorkers({ QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY, QUORUM_OPENAI_BASE_URL: openai.baseUrl });
    api = await startApi('B');
  });
  after(async () => {
    await api.close();
    await workers.stop();
    await openai.close();
  });

  interface Served {
    kind: Kind;
    prompt: number;
    completion: number;
    finish: 'stop' | 'length';
    /** Micro-dollars at the published prices; 0 for a refused request, which bills nothing. */
    cost: number;
  }

  /** One Form B call of a panel of gpt-4.1 and gpt-4.1-mini through the API: its receipt, and what the provider served. */
  async function panelCall(
    rounds: number,
    content: string,
    history: string,
    classifier?: string,
    express: 'never' | 'auto' = 'never',
  ): Promise<{ receipt: Receipt; billable: Served[] }> {
    const org = await newOrg(10);
    const mode = await customMode(org.orgId, 'quorum-panel', {
      tiers: { experience: { seats: ['openai/gpt-4.1-mini'] }, plus: { seats: ['openai/gpt-4.1', 'openai/gpt-4.1-mini'] } },
      staff: {
        judge: { engine: 'openai/gpt-4.1' },
        synthesis: { engine: 'openai/gpt-4.1' },
        ...(classifier ? { classifier: { engine: classifier } } : {}),
      },
      rounds,
      critique: 'always',
      express,
      skipSynthesisWhenConverged: false,
      seatMaxOutputTokens: SEAT_MAX,
    });
    const seen = openai.requests.length;
    const idempotencyKey = `receipts-add-up-${org.orgId}`;
    const r = await call(api, 'POST', '/v1/chat/completions', {
      key: org.ownerKey,
      body: { model: mode.ticker, messages: [{ role: 'user', content }] },
      headers: { 'Idempotency-Key': idempotencyKey },
    });
    await recordHistory(history, workflowIds.deliberation(org.orgId, idempotencyKey));
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const requestId = String((r.body.svc as { request_id: string }).request_id);
    const got = await call(api, 'GET', `/v1/receipts/${requestId}`, { key: org.ownerKey });
    assert.equal(got.status, 200, JSON.stringify(got.body));
    const served = openai.requests.slice(seen).map((req): Served => {
      const { prompt, completion, finish } = usageOf(req);
      const price = PRICES[model(req)];
      assert.ok(price, `a price for ${model(req)}`);
      const refused = req.bodyText.includes(RETRY_REFUSED) && kindOf(req) === 'seat' && maxOut(req) > SEAT_MAX;
      return refused
        ? { kind: kindOf(req), prompt: 0, completion: 0, finish, cost: 0 }
        : { kind: kindOf(req), prompt, completion, finish, cost: prompt * price.input + completion * price.output };
    });
    // Every engine call the provider served is the call's, the classifier's included (issue 38).
    return { receipt: (got.body as unknown as { receipt: Receipt }).receipt, billable: served };
  }

  /**
   * Seat rows plus the staff's calls (judge, synthesis, classifier) are the call's usage; the bill is the served tokens
   * at the published prices: engines at cost, the 5% platform fee on them, the mode's fee.
   */
  function assertAddsUp(receipt: Receipt, billable: readonly Served[]): void {
    const staff = billable.filter((s) => s.kind !== 'seat');
    assert.equal(sum(receipt.seats.map((s) => s.tokens_in)) + sum(staff.map((s) => s.prompt)), receipt.prompt_tokens);
    assert.equal(sum(receipt.seats.map((s) => s.tokens_out)) + sum(staff.map((s) => s.completion)), receipt.completion_tokens);
    assert.equal(receipt.prompt_tokens, sum(billable.map((s) => s.prompt)));
    assert.equal(receipt.completion_tokens, sum(billable.map((s) => s.completion)));
    const engines = sum(billable.map((s) => s.cost));
    assert.equal(sum(receipt.seats.map((s) => micros(s.real_cost_usd))) + sum(staff.map((s) => s.cost)), engines);
    const platformFee = Math.round(engines / 20);
    const modeFee = sum(billable.map((s) => s.prompt * MODE_FEE.input + s.completion * MODE_FEE.output));
    assert.equal(micros(receipt.charges.gateway_usd), engines);
    assert.equal(micros(receipt.charges.platform_fee_usd), platformFee);
    assert.equal(micros(receipt.charges.mode_fee_usd), modeFee);
    assert.equal(micros(receipt.billed_usd), engines + platformFee + modeFee);
  }

  it('a two-round panel: one best row, the winning round; the cut seat shows 16 + 32 tokens; rows + staff = usage and bill', async () => {
    const { receipt, billable } = await panelCall(2, 'Why is the sky blue? Explain step by step.', 'receipts-cut-seat-two-rounds');
    assert.deepEqual(
      billable.map((s) => s.kind).sort(),
      ['judge', 'judge', 'seat', 'seat', 'seat', 'seat', 'seat', 'synthesis'],
      'two rounds of two seats, one seat retried once, a judge per round, one synthesis',
    );
    assert.equal(billable.filter((s) => s.finish === 'length').length, 1, 'one cut answer');

    // is_best_seat: exactly one row, the small model's round-2 answer that won (it scored lowest in round 1).
    assert.equal(receipt.seats.length, 4);
    assert.deepEqual(
      receipt.seats.filter((s) => s.is_best_seat).map((s) => [s.model_used, s.round_number]),
      [['openai/gpt-4.1-mini', 2]],
    );

    // The cut seat's round-1 row carries both attempts: 16 + 32 completion tokens, 100 + 100 prompt tokens.
    const cut = receipt.seats.find((s) => s.model_used === 'openai/gpt-4.1' && s.round_number === 1);
    assert.ok(cut);
    assert.deepEqual([cut.tokens_in, cut.tokens_out], [200, 48]);
    assert.equal(micros(cut.real_cost_usd), 100 * 2 + 16 * 8 + 100 * 2 + 32 * 8);
    assertAddsUp(receipt, billable);
  });

  it('a cut seat whose retry is refused for good keeps its billed cut answer: its row, not a backup, carries it', async () => {
    const { receipt, billable } = await panelCall(1, `Why is the sky blue? ${RETRY_REFUSED}`, 'receipts-cut-retry-refused');
    const seat1 = receipt.seats.filter((s) => s.role === 'seat1');
    assert.deepEqual(
      seat1.map((s) => [s.model_used, s.tokens_in, s.tokens_out]),
      [['openai/gpt-4.1', 100, 16]],
      'one row, on its own engine, with the cut attempt it was billed for',
    );
    assertAddsUp(receipt, billable);
  });

  it("a mode with a classifier model: its call is in the receipt, the usage and the bill like any engine call's", async () => {
    const { receipt, billable } = await panelCall(
      1,
      'Why is the sky blue? Explain step by step.',
      'receipts-classifier',
      'openai/gpt-4.1-mini',
    );
    assert.deepEqual(
      billable.map((s) => s.kind).sort(),
      ['classifier', 'judge', 'seat', 'seat', 'seat', 'synthesis'],
      'the classifier, two seats (one retried once), a judge, a synthesis',
    );
    // The model's verdict was read: the receipt's difficulty is the classifier's.
    assert.equal(receipt.difficulty_score, 0.8);
    // Its record on the receipt is what the provider served: 50 in, 10 out at gpt-4.1-mini's $0.4 / $1.6 per Mtok.
    const record = receipt.staff.classifier;
    assert.ok(record, 'the receipt names the classifier call');
    assert.deepEqual(
      [record.model_used, record.tokens_in, record.tokens_out, micros(record.real_cost_usd)],
      ['openai/gpt-4.1-mini', 50, 10, 50 * 0.4 + 10 * 1.6],
    );
    assertAddsUp(receipt, billable);
  });

  it('the express lane with a classifier model: one seat and the classifier make the usage and the bill', async () => {
    const { receipt, billable } = await panelCall(
      1,
      `Name the sky's colour. ${EASY}`,
      'receipts-classifier-express',
      'openai/gpt-4.1-mini',
      'auto',
    );
    assert.equal(receipt.difficulty_score, 0.1);
    assert.deepEqual(
      billable.map((s) => s.kind).sort(),
      ['classifier', 'seat'],
      'the classifier, then one seat alone; no judge, no synthesis',
    );
    assert.deepEqual([receipt.staff.classifier?.tokens_in, receipt.staff.classifier?.tokens_out], [50, 10]);
    assertAddsUp(receipt, billable);
  });
});
