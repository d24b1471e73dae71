import assert from 'node:assert/strict';
import { BALLOT_TAG } from '../../../domain/aggregation';
import type { AnswerOptions } from '../../../domain/answer-options';
import type { Aggregation, ModeRecord } from '../../../domain/modes';
import type { Outcome } from '../../../domain/outcome';
import { JUDGE_TAG, SYNTHESIS_TAG } from '../../../domain/prompts';
import { openAiReply, type RecordedRequest, type Reply } from '../../fixtures/providers';
import { stack } from '../../harness/stack';
import { call, newOrg, startApi, USER } from '../api/helpers';
import { customMode, deliberate, withOpenAiLoopback } from './helpers';

/**
 * Issue 52: a panel that keeps the answer, on real workflows through the deliberation's own path, its seats on the
 * real OpenAI adapter against a loopback server. Each seat is told apart by its seed (1, 2, 3); the prompt names the
 * scenario, and the script answers each seat as the scenario says. Figures are worked here from the loopback's
 * counts at the catalog's published prices.
 */
const SERVED = { prompt: 100, completion: 20 };
/** USD per million tokens (= µ$ per token): the catalog's gpt-4.1 and gpt-4.1-mini. */
const PRICES: Record<string, { input: number; output: number }> = {
  'gpt-4.1': { input: 2, output: 8 },
  'gpt-4.1-mini': { input: 0.4, output: 1.6 },
};

/** Each scenario's three seat texts, by seed; `null`: the seat is never expected to be asked. */
const SEATS: Record<string, [string, string, string | null]> = {
  vote: ['Blue light scatters most.\nFinal answer: B', 'It is the second option.\nFinal answer: (B)', 'Final answer: C'],
  tie: ['Short waves scatter.\nFinal answer: A', 'Final answer: C', 'I cannot tell which option fits.'],
  ballot: ['The sky is blue because blue light scatters.', 'Rayleigh scattering makes it blue.', 'Mostly scattering, I believe.'],
  pinned: ['Because of scattering.\nFinal answer: B', 'Final answer: B', 'Final answer: B'],
  select: ['Final answer: A', 'Final answer: B', 'Final answer: B'],
  open: ['Sunlight scatters off air molecules.', 'Short wavelengths scatter more.', 'Blue light bounces around the sky.'],
  wave: ['Final answer: B', 'So the answer is B.\nFinal answer: B', null],
  plain: ['Rayleigh scattering.', 'Scattering of short waves.', 'Blue light scatters most.'],
};

const scenarioOf = (req: RecordedRequest): string => /\[\[(\w+)\]\]/.exec(req.bodyText)?.[1] ?? 'plain';
const isSeat = (req: RecordedRequest): boolean => ![JUDGE_TAG, SYNTHESIS_TAG, BALLOT_TAG].some((t) => req.bodyText.includes(t));
const model = (req: RecordedRequest): string => (req.body as { model: string }).model;

function script(req: RecordedRequest): Reply {
  const counts = { promptTokens: SERVED.prompt, completionTokens: SERVED.completion };
  if (req.bodyText.includes(JUDGE_TAG)) {
    const labels = [...new Set([...req.bodyText.matchAll(/Answer ([A-C]):/g)].map((m) => m[1]))].sort();
    // The last label shown: not the first, so a test can tell the judge's choice from a default.
    const best = labels[labels.length - 1];
    const verdict = { scores: Object.fromEntries(labels.map((l) => [l, 5])), best, why: 'Clearer.', divergence: 0.6, converged: false };
    return openAiReply({ text: JSON.stringify(verdict), ...counts });
  }
  if (req.bodyText.includes(BALLOT_TAG)) return openAiReply({ text: JSON.stringify({ A: 'B', B: 'B', C: null }), ...counts });
  if (req.bodyText.includes(SYNTHESIS_TAG)) return openAiReply({ text: 'Rewritten.\nFinal answer: C', ...counts });
  const seed = (req.body as { seed?: number }).seed ?? 1;
  return openAiReply({ text: SEATS[scenarioOf(req)][seed - 1] ?? 'unexpected seat', ...counts });
}

const CHOICE = { answerKind: { kind: 'choice' as const } };

describe('a panel that keeps the answer (issue 52): vote, tie, ballot, pinned synthesis, first wave', function () {
  this.timeout(120_000);
  const openai = withOpenAiLoopback(script);

  /** A panel of gpt-4.1, gpt-4.1-mini, gpt-4.1 (seeds 1, 2, 3), one round, judged and synthesised by gpt-4.1. */
  async function panelMode(orgId: string, aggregation?: Aggregation): Promise<ModeRecord> {
    return customMode(orgId, 'quorum-panel', {
      tiers: {
        experience: { seats: ['openai/gpt-4.1-mini'] },
        plus: {
          seats: ['openai/gpt-4.1', 'openai/gpt-4.1-mini', 'openai/gpt-4.1'],
          tunings: [{ seed: 1 }, { seed: 2 }, { seed: 3 }],
        },
      },
      staff: { judge: { engine: 'openai/gpt-4.1' }, synthesis: { engine: 'openai/gpt-4.1' } },
      rounds: 1,
      critique: 'never',
      grounding: 'off',
      express: 'never',
      skipSynthesisWhenConverged: false,
      ...(aggregation && { aggregation }),
    });
  }

  async function run(
    scenario: string,
    aggregation: Aggregation | undefined,
    answer: AnswerOptions = CHOICE,
  ): Promise<{ outcome: Outcome; requests: RecordedRequest[] }> {
    const org = await newOrg(10);
    const mode = await panelMode(org.orgId, aggregation);
    const seen = openai().requests.length;
    const { outcome } = await deliberate(
      { org, mode, content: `Why is the sky blue? Options: A) dust B) scattering C) oceans [[${scenario}]]`, answer },
      `aggregation-${scenario}`,
    );
    return { outcome, requests: openai().requests.slice(seen) };
  }

  const vote: Aggregation = { method: 'vote', prose: 'verbatim', tieBreak: 'judge', ballot: true };

  it("a vote returns the winning seat's text as it was written: no judge, no synthesis", async () => {
    const { outcome, requests } = await run('vote', vote);
    assert.equal(outcome.answer, SEATS.vote[0], 'seat1 gave B, the answer with two votes, first');
    assert.equal(requests.filter(isSeat).length, 3);
    assert.equal(requests.length, 3, 'nothing but the three seats was called');
    assert.equal(outcome.bestSeatJudgedBy, 'heuristic');
    assert.equal(outcome.staff.synthesis, null);
    assert.equal(outcome.bestSeat?.role, 'seat1');
    assert.deepEqual(
      outcome.seatPasses.filter((p) => p.isBest).map((p) => p.role),
      ['seat1'],
    );
    const a = outcome.aggregation;
    assert.ok(a);
    assert.deepEqual(
      [a.method, a.answerKind, a.decidedBy, a.winner, a.synthesis, a.earlyStop, a.seatsAsked],
      ['vote', 'choice', 'plurality', { role: 'seat1', answer: 'B' }, 'none', false, 3],
    );
    assert.deepEqual(a.votes, [
      { answer: 'B', votes: 2 },
      { answer: 'C', votes: 1 },
    ]);
    // Under retention the answers go with the texts (migration 035); the votes stay.
    const blanked = await stack().db.raw<{ rows: { o: Outcome }[] }>(
      "select blank_transcript(outcome, 'zero_retention') as o from receipts where request_id = ?",
      [outcome.requestId],
    );
    const kept = blanked.rows[0].o.aggregation;
    assert.deepEqual(
      kept?.ballots.map((b) => b.answer),
      [null, null, null],
    );
    assert.deepEqual(
      kept?.votes.map((v) => [v.answer, v.votes]),
      [
        ['', 2],
        ['', 1],
      ],
    );
    assert.equal(kept?.winner.answer, null);
    assert.equal(kept?.decidedBy, 'plurality');
  });

  it('a tie is broken by the judge among the tied seats only', async () => {
    const { outcome, requests } = await run('tie', vote);
    const judge = requests.filter((r) => r.bodyText.includes(JUDGE_TAG));
    assert.equal(judge.length, 1, 'one judge call, for the tie');
    const shown = JSON.parse(judge[0].bodyText) as { messages: { content: string }[] };
    const user = shown.messages.map((m) => m.content).join('\n');
    assert.ok(!user.includes(SEATS.tie[2] as string), 'the abstaining seat is not shown to the judge');
    // The script's judge names the last label it was shown: the answer is the text shown under it.
    const labelled = Object.fromEntries([...user.matchAll(/Answer ([A-C]):\n([\s\S]*?)(?=\n\nAnswer [A-C]:|$)/g)].map((m) => [m[1], m[2]]));
    assert.deepEqual(Object.keys(labelled).sort(), ['A', 'B'], 'two tied seats shown');
    assert.equal(outcome.answer, labelled.B);
    assert.ok([SEATS.tie[0], SEATS.tie[1]].includes(outcome.answer));
    assert.equal(outcome.aggregation?.decidedBy, 'tie_judge');
    assert.equal(outcome.bestSeatJudgedBy, 'llm');
    assert.equal(requests.filter((r) => r.bodyText.includes(SYNTHESIS_TAG)).length, 0);
  });

  it('no readable seat: one ballot call reads the answers; the winning text is returned with the answer stated', async () => {
    const { outcome, requests } = await run('ballot', vote);
    const ballots = requests.filter((r) => r.bodyText.includes(BALLOT_TAG));
    assert.equal(ballots.length, 1);
    const body = ballots[0].body as { response_format: { type: string; json_schema: { schema: { required: string[] } } } };
    assert.equal(body.response_format.type, 'json_schema', 'the ballot is constrained by a JSON schema');
    assert.deepEqual(body.response_format.json_schema.schema.required, ['A', 'B', 'C']);
    // Labels in seat order: A and B (seat1, seat2) read as B.
    assert.equal(outcome.answer, `${SEATS.ballot[0]}\n\nFinal answer: B`);
    const a = outcome.aggregation;
    assert.deepEqual([a?.decidedBy, a?.answerLineAdded, a?.ballotCall?.modelUsed], ['ballot', true, 'openai/gpt-4.1']);
    // The ballot is on the receipt in full: the provider's counts at gpt-4.1's prices (100 × $2 + 20 × $8 per Mtok).
    assert.deepEqual([a?.ballotCall?.tokensIn, a?.ballotCall?.tokensOut, a?.ballotCall?.realCostMicros], [100, 20, 360]);
    assert.deepEqual(
      a?.ballots.map((b) => [b.role, b.answer, b.readBy]),
      [
        ['seat1', 'B', 'ballot'],
        ['seat2', 'B', 'ballot'],
        ['seat3', null, null],
      ],
    );
    // The ballot is billed as any staff call: four calls at the served counts.
    const engines = requests.reduce((n, r) => n + SERVED.prompt * PRICES[model(r)].input + SERVED.completion * PRICES[model(r)].output, 0);
    assert.equal(outcome.money.gatewayMicros, engines);
  });

  it("a pinned synthesis that changes the answer is replaced by the seat's text, and the receipt says so", async () => {
    const { outcome, requests } = await run('pinned', { ...vote, prose: 'pinned' });
    const synth = requests.filter((r) => r.bodyText.includes(SYNTHESIS_TAG));
    assert.equal(synth.length, 1, 'the synthesis ran');
    assert.match(synth[0].bodyText, /Final answer: B"/, 'its prompt ends with the chosen answer');
    assert.equal(outcome.answer, SEATS.pinned[0]);
    assert.equal(outcome.aggregation?.synthesis, 'answer_differs');
    assert.ok(outcome.staff.synthesis, 'the synthesis call is on the receipt: it ran and is billed');
  });

  it('two agreeing seats in the first wave: no third seat asked, two seats billed (worked by hand)', async () => {
    const { outcome, requests } = await run('wave', { ...vote, firstWave: 2 });
    assert.deepEqual(
      requests.map((r) => [model(r), (r.body as { seed: number }).seed]),
      [
        ['gpt-4.1', 1],
        ['gpt-4.1-mini', 2],
      ],
    );
    assert.equal(outcome.answer, SEATS.wave[0]);
    assert.deepEqual([outcome.seats, outcome.seatsAnswered, outcome.seatsUnavailable], [3, 2, []]);
    assert.deepEqual(
      [outcome.aggregation?.earlyStop, outcome.aggregation?.seatsAsked, outcome.aggregation?.decidedBy],
      [true, 2, 'unanimous'],
    );
    // gpt-4.1: 100 in × $2 + 20 out × $8 per Mtok = 360 µ$; gpt-4.1-mini: 100 × 0.4 + 20 × 1.6 = 72 µ$.
    // Platform fee 5% per call, rounded per call: 18 + 3.6 → 4 = 22 µ$. Form B mode fee of quorum-panel, $0.5 per
    // Mtok in and 4x out: 200 × 0.5 + 40 × 2 = 180 µ$. Billed 360 + 72 + 22 + 180 = 634 µ$.
    assert.deepEqual(
      [outcome.money.gatewayMicros, outcome.money.platformFeeMicros, outcome.money.modeFeeMicros, outcome.money.billedMicros],
      [432, 22, 180, 634],
    );
    assert.deepEqual([outcome.usage.promptTokens, outcome.usage.completionTokens], [200, 40]);
  });

  it('select: the judge names one seat and its text is returned verbatim, no synthesis', async () => {
    const { outcome, requests } = await run('select', { method: 'select', prose: 'verbatim', tieBreak: 'judge', ballot: false });
    const judge = requests.filter((r) => r.bodyText.includes(JUDGE_TAG));
    assert.equal(judge.length, 1);
    const user = (JSON.parse(judge[0].bodyText) as { messages: { content: string }[] }).messages[1].content;
    // The script's judge names the last of three labels: the answer is the text shown under C, as written.
    const shownC = /Answer C:\n([\s\S]*)$/.exec(user)?.[1];
    assert.equal(outcome.answer, shownC);
    assert.equal(requests.filter((r) => r.bodyText.includes(SYNTHESIS_TAG)).length, 0);
    assert.deepEqual([outcome.aggregation?.decidedBy, outcome.bestSeatJudgedBy], ['judge_select', 'llm']);
  });

  it('a vote without a declared kind reads only Final answer lines: open prose is selected by the judge, not voted', async () => {
    const { outcome, requests } = await run('open', vote, {});
    assert.equal(requests.filter((r) => r.bodyText.includes(BALLOT_TAG)).length, 0, 'no ballot without a kind to read');
    assert.equal(requests.filter((r) => r.bodyText.includes(JUDGE_TAG)).length, 1);
    assert.ok(SEATS.open.includes(outcome.answer), 'a seat’s text, verbatim');
    assert.deepEqual(
      [outcome.aggregation?.answerKind, outcome.aggregation?.decidedBy, outcome.aggregation?.votes],
      [null, 'judge_select', []],
    );
  });

  it('on the wire: svc.answer_kind in, svc.aggregation on the completion and the receipt (Form B)', async () => {
    const api = await startApi('B');
    try {
      const org = await newOrg(10);
      const mode = await panelMode(org.orgId, vote);
      const body = { model: mode.ticker, messages: USER('Why is the sky blue? [[vote]]'), svc: { answer_kind: 'choice' } };
      const r = await call(api, 'POST', '/v1/chat/completions', { key: org.ownerKey, body });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const svc = r.body.svc as { request_id: string; aggregation: Record<string, unknown>; best_seat_judged_by: string };
      const choices = r.body.choices as { message: { content: string } }[];
      assert.equal(choices[0].message.content, SEATS.vote[0]);
      assert.equal(svc.best_seat_judged_by, 'heuristic');
      const expected = {
        method: 'vote',
        answer_kind: 'choice',
        decided_by: 'plurality',
        winner: { seat: 'seat1', answer: 'B' },
        seats_asked: 3,
        early_stop: false,
        ballot_call: null,
        synthesis: 'none',
        answer_line_added: false,
      };
      for (const [k, v] of Object.entries(expected)) assert.deepEqual(svc.aggregation[k], v, k);
      const receipt = await call(api, 'GET', `/v1/receipts/${svc.request_id}?include_transcript=true`, { key: org.ownerKey });
      const rec = (receipt.body as { receipt: { aggregation: Record<string, unknown>; synthesis?: unknown } }).receipt;
      assert.deepEqual(rec.aggregation.votes, [
        { answer: 'B', votes: 2 },
        { answer: 'C', votes: 1 },
      ]);
      const bad = await call(api, 'POST', '/v1/chat/completions', {
        key: org.ownerKey,
        body: { ...body, svc: { answer_kind: 'essay' } },
      });
      assert.equal(bad.status, 400);
      assert.equal((bad.body.error as { param: string }).param, 'svc.answer_kind');
    } finally {
      await api.close();
    }
  });

  it('a mode without aggregation answers and bills exactly as before: judge, then synthesis', async () => {
    const { outcome, requests } = await run('plain', undefined, { answerKind: { kind: 'choice' } });
    assert.equal(outcome.aggregation, undefined);
    assert.equal(requests.filter(isSeat).length, 3);
    assert.equal(requests.filter((r) => r.bodyText.includes(JUDGE_TAG)).length, 1);
    assert.equal(requests.filter((r) => r.bodyText.includes(SYNTHESIS_TAG)).length, 1);
    assert.equal(requests.filter((r) => r.bodyText.includes(BALLOT_TAG)).length, 0);
    assert.equal(outcome.answer, 'Rewritten.\nFinal answer: C', "the synthesis's text, as before issue 52");
    // Five calls: three seats (gpt-4.1 twice, gpt-4.1-mini once), judge and synthesis on gpt-4.1.
    const perCall = { 'gpt-4.1': 360, 'gpt-4.1-mini': 72 };
    const fees = { 'gpt-4.1': 18, 'gpt-4.1-mini': 4 };
    const models = requests.map((r) => model(r) as keyof typeof perCall);
    assert.equal(
      outcome.money.gatewayMicros,
      models.reduce((n, m) => n + perCall[m], 0),
    );
    assert.equal(
      outcome.money.platformFeeMicros,
      models.reduce((n, m) => n + fees[m], 0),
    );
    assert.equal(outcome.money.modeFeeMicros, requests.length * (100 * 0.5 + 20 * 2));
  });
});
