import assert from 'node:assert/strict';
import { QuorumError } from '../../../domain/errors';
import { JUDGE_TAG } from '../../../domain/prompts';
import { getBalance } from '../../../db/repositories/ledger';
import { stack } from '../../harness/stack';
import {
  ANTHROPIC_TEST_KEY,
  OPENAI_TEST_KEY,
  anthropicError,
  anthropicReply,
  openAiError,
  openAiReply,
  startAnthropicLoopback,
  startOpenAiLoopback,
  type Loopback,
  type RecordedRequest,
  type Reply,
} from '../../fixtures/providers';
import { assertNothingBilled, chargeCount, customMode, deliberate, newOrg, startProductWorkers } from './helpers';

const SEAT_MAX = 256;

/** The judge's JSON verdict over whichever labels the request showed, the first label winning. */
function verdict(req: RecordedRequest): string {
  const labels = [...req.bodyText.matchAll(/Answer ([A-C]):/g)].map((m) => m[1]);
  const unique = [...new Set(labels)];
  return JSON.stringify({
    scores: Object.fromEntries(unique.map((l, i) => [l, 9 - i])),
    best: unique[0],
    why: `Answer ${unique[0]} is correct and complete.`,
    divergence: 0.5,
    converged: false,
    contested: { label: unique[unique.length - 1], quote: 'a passage', why: 'it contradicts the others' },
    factual_conflict: true,
  });
}

function maxTokens(req: RecordedRequest): number {
  return (req.body as { max_tokens: number }).max_tokens;
}

/** Provider behaviour is chosen by markers in the prompt, so one pair of servers serves every case. */
function openAiScript(req: RecordedRequest): Reply {
  const text = req.bodyText;
  if (text.includes('[[all-401]]') || (text.includes('[[critique-fails]]') && text.includes('Other panelists answered')))
    return openAiError(401, 'Incorrect API key provided.');
  if (text.includes(JUDGE_TAG)) return openAiReply({ text: verdict(req) });
  if (text.includes('[[openai-404]]') && !text.includes('Write the single best answer'))
    return openAiError(404, 'The model `gpt-4.1` does not exist or you do not have access to it.');
  if (text.includes('[[unstorable]]')) return openAiReply({ text: 'A NUL \u0000 and a lone surrogate \ud800 in the answer.' });
  if (text.includes('[[cut-once]]') && maxTokens(req) === SEAT_MAX)
    return openAiReply({ text: 'The answer begins but', finish: 'length', completionTokens: SEAT_MAX });
  return openAiReply({ text: 'First view: the sky is blue because of Rayleigh scattering.', completionTokens: 14 });
}

function anthropicScript(req: RecordedRequest): Reply {
  const text = req.bodyText;
  if (text.includes('[[all-401]]') || (text.includes('[[critique-fails]]') && text.includes('Other panelists answered')))
    return anthropicError(401, 'invalid x-api-key');
  if (text.includes(JUDGE_TAG)) return anthropicReply({ text: verdict(req) });
  return anthropicReply({ text: 'Second view: Rayleigh scattering makes the sky blue.', outputTokens: 12 });
}

describe('deliberation workflow against loopback providers', function () {
  this.timeout(120_000);
  let openai: Loopback;
  let anthropic: Loopback;
  let workers: { stop(): Promise<void> };

  before(async () => {
    openai = await startOpenAiLoopback(openAiScript);
    anthropic = await startAnthropicLoopback(anthropicScript);
    workers = await startProductWorkers({
      QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY,
      QUORUM_OPENAI_BASE_URL: openai.baseUrl,
      QUORUM_ANTHROPIC_API_KEY: ANTHROPIC_TEST_KEY,
      QUORUM_ANTHROPIC_BASE_URL: anthropic.baseUrl,
    });
  });
  after(async () => {
    await workers.stop();
    await openai.close();
    await anthropic.close();
  });
  afterEach(() => {
    assert.deepEqual(
      [...openai.rejected, ...anthropic.rejected].map((r) => r.reason),
      [],
      'every provider request must be well formed',
    );
  });

  const panelMode = (orgId: string): ReturnType<typeof customMode> =>
    customMode(orgId, 'quorum-panel', {
      tiers: { experience: { seats: ['openai/gpt-4.1-mini'] }, plus: { seats: ['openai/gpt-4.1', 'anthropic/claude-sonnet-4'] } },
      rounds: 1,
      critique: 'never',
      express: 'never',
      skipSynthesisWhenConverged: false,
      seatMaxOutputTokens: SEAT_MAX,
    });

  it('runs on the providers with an LLM judge; the judge sees labels, never engine names', async () => {
    const org = await newOrg();
    const { outcome: o } = await deliberate({ org, mode: await panelMode(org.orgId), content: 'Why is the sky blue?' }, 'providers-panel');
    assert.deepEqual(o.engines.sort(), ['anthropic/claude-sonnet-4', 'openai/gpt-4.1']);
    assert.equal(o.bestSeatJudgedBy, 'llm');
    assert.equal(o.staff.judge?.modelUsed, 'anthropic/claude-sonnet-4');
    assert.equal(o.factualConflict, true);
    assert.ok(o.contestedPassage);
    assert.equal(o.seatPasses.filter((r) => r.fallbackUsed).length, 0);
    const judgeCalls = anthropic.requests.filter((r) => r.bodyText.includes(JUDGE_TAG));
    assert.ok(judgeCalls.length >= 1);
    for (const r of judgeCalls)
      assert.doesNotMatch(JSON.stringify((r.body as { messages: unknown }).messages), /gpt|claude|openai|anthropic|seat\d/i);
  });

  it('settles an answer holding a NUL and a lone surrogate: stored with U+FFFD, billed once, replayed from the store', async () => {
    const org = await newOrg();
    const mode = await panelMode(org.orgId);
    const call = { org, mode, content: 'Quote this back. [[unstorable]]', idempotencyKey: `unstorable-${org.orgId}` };
    const { outcome: o } = await deliberate(call);
    assert.equal(o.status, 'succeeded');
    const seat1 = o.seatPasses.find((p) => p.role === 'seat1');
    assert.equal(seat1?.content, 'A NUL \u0000 and a lone surrogate \ud800 in the answer.', 'the caller gets what the engine said');
    const { outcome: replay, replayed } = await deliberate(call);
    assert.equal(replayed, true);
    assert.equal(replay.seatPasses.find((p) => p.role === 'seat1')?.content, 'A NUL \ufffd and a lone surrogate \ufffd in the answer.');
    const stored = await stack().db('receipt_seats').where({ request_id: o.requestId, role: 'seat1' }).first('content');
    assert.equal(stored.content, 'A NUL \ufffd and a lone surrogate \ufffd in the answer.');
    assert.equal(await chargeCount(org.orgId), 1);
  });

  it('moves a seat whose engine fails permanently to its backup, and the receipt says so', async () => {
    const org = await newOrg();
    const { outcome: o } = await deliberate(
      { org, mode: await panelMode(org.orgId), content: 'Why is the sky blue? [[openai-404]]' },
      'providers-fallback',
    );
    const seat1 = o.seatPasses.find((r) => r.role === 'seat1');
    assert.equal(seat1?.fallbackUsed, true);
    assert.equal(seat1?.originalModel, 'openai/gpt-4.1');
    assert.equal(seat1?.modelUsed, 'anthropic/claude-sonnet-4');
    assert.deepEqual(
      o.substitutions.map((s) => [s.role, s.original, s.used]),
      [['seat1', 'openai/gpt-4.1', 'anthropic/claude-sonnet-4']],
    );
    assert.match(o.substitutions[0].reason, /does not exist/);
    assert.equal(o.seatsAnswered, 2);
    // A permanent failure is not retried: one 404 for the seat.
    const seatCalls404 = openai.requests.filter(
      (r) =>
        r.bodyText.includes('[[openai-404]]') && !r.bodyText.includes(JUDGE_TAG) && !r.bodyText.includes('Write the single best answer'),
    );
    assert.equal(seatCalls404.length, 1);
  });

  it('retries a cut-off seat once with more room; the retry answering counts it as answered', async () => {
    const org = await newOrg();
    const { outcome: o } = await deliberate(
      { org, mode: await panelMode(org.orgId), content: 'Why is the sky blue? [[cut-once]]' },
      'providers-cut-seat',
    );
    const seat1 = o.seatPasses.find((r) => r.role === 'seat1');
    assert.equal(seat1?.finish, 'stop');
    assert.equal(o.seatsAnswered, 2);
    const tries = openai.requests.filter(
      (r) => r.bodyText.includes('[[cut-once]]') && !r.bodyText.includes(JUDGE_TAG) && !r.bodyText.includes('Write the single best answer'),
    );
    assert.deepEqual(tries.map(maxTokens), [SEAT_MAX, SEAT_MAX * 2]);
    assert.equal(o.finishReason, 'stop');
  });

  it('answers mode_unavailable when no seat can answer, bills nothing and releases the reservation', async () => {
    const org = await newOrg();
    const before = await getBalance(stack().db, org.orgId);
    await assert.rejects(
      deliberate({ org, mode: await panelMode(org.orgId), content: 'Why is the sky blue? [[all-401]]' }, 'providers-all-down'),
      (e: unknown) => {
        assert.ok(e instanceof QuorumError);
        assert.equal(e.code, 'mode_unavailable');
        assert.ok(e.requestId);
        return true;
      },
    );
    await assertNothingBilled(org.orgId, before, 'mode_unavailable');
  });

  it('keeps the first round when no seat can revise in a critique round', async () => {
    const org = await newOrg();
    const mode = await customMode(org.orgId, 'quorum-debate', {
      tiers: { experience: { seats: ['openai/gpt-4.1-mini'] }, plus: { seats: ['openai/gpt-4.1', 'anthropic/claude-sonnet-4'] } },
      rounds: 2,
      seatMaxOutputTokens: SEAT_MAX,
    });
    const { outcome: o } = await deliberate({ org, mode, content: 'Why is the sky blue? [[critique-fails]]' });
    assert.equal(o.status, 'succeeded');
    assert.equal(o.rounds, 1, 'the failed critique pass produced nothing');
    assert.equal(o.seatsAnswered, 2);
    assert.ok(o.seatPasses.every((r) => r.round === 1));
    assert.ok(o.answer.length > 0);
  });
});
