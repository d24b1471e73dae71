import assert from 'node:assert/strict';
import { formA } from '../../../api/forms/a';
import { formB } from '../../../api/forms/b';
import type { JsonObject } from '../../../api/forms/json';
import { streamEventJson } from '../../../api/forms/response-events';
import type { AggregationRecord } from '../../../domain/aggregation';
import { classifyHeuristic } from '../../../domain/classifier';
import type { Outcome, SeatPass, SeatRole } from '../../../domain/outcome';
import type { ResponseView } from '../../../operations/responses';
import type { EstimateView } from '../../../operations/estimate';
import { quote, tierRates } from '../../../domain/estimate';
import { SYSTEM_MODES, type ModeRecord } from '../../../domain/modes';

/** Issue 52: `svc.aggregation` of a completion and `aggregation` of a receipt, in both Forms, and the `aggregated` step. */

function pass(role: SeatRole, isBest: boolean, content: string): SeatPass {
  return {
    role,
    round: 1,
    modelUsed: `sim/${role}`,
    originalModel: null,
    fallbackUsed: false,
    tokensIn: 10,
    tokensOut: 20,
    startedAt: '2025-01-01T00:00:00.000Z',
    endedAt: '2025-01-01T00:00:01.000Z',
    latencyMs: 1000,
    judgeScore: null,
    isBest,
    source: 'service',
    realCostMicros: 5,
    finish: 'stop',
    feeMicros: 0,
    feeRatePpm: 50_000,
    content,
  };
}

const VOTE: AggregationRecord<SeatRole> = {
  method: 'vote',
  answerKind: 'short_text',
  ballots: [
    { role: 'seat1', answer: 'text paris', readBy: 'text' },
    { role: 'seat2', answer: 'text paris', readBy: 'text' },
    { role: 'seat3', answer: null, readBy: null },
  ],
  votes: [{ answer: 'text paris', votes: 2 }],
  winner: { role: 'seat1', answer: 'text paris' },
  decidedBy: 'plurality',
  seatsAsked: 3,
  earlyStop: false,
  ballotCall: { modelUsed: 'sim/judge', latencyMs: 120, tokensIn: 300, tokensOut: 12, realCostMicros: 1_234 },
  synthesis: 'none',
  answerLineAdded: false,
};

function outcome(extra: Partial<Outcome> = {}): Outcome {
  return {
    requestId: 'req_agg',
    orgId: 'org_1',
    modeId: 'quorum-panel',
    ticker: 'QRM:PANL',
    configHash: 'hash',
    tier: 'plus',
    status: 'succeeded',
    answer: 'Paris.\n\nFinal answer: Paris',
    finishReason: 'stop',
    classification: classifyHeuristic([{ role: 'user', content: 'What is the capital of France?' }]),
    lane: 'panel',
    rounds: 1,
    seats: 3,
    seatsAnswered: 3,
    converged: false,
    divergenceFirst: 0.333,
    divergenceFinal: 0.333,
    contestedPassage: null,
    factualConflict: false,
    bestSeat: { role: 'seat1', modelUsed: 'sim/seat1', judgeScore: null, content: 'Paris.\n\nFinal answer: Paris' },
    bestSeatRationale: 'Answer A gives the answer 2 of 3 seats gave (vote).',
    bestSeatJudgedBy: 'heuristic',
    deliberation: [],
    engines: ['sim/seat1', 'sim/seat2', 'sim/seat3'],
    substitutions: [],
    seatsUnavailable: [],
    staffUnavailable: [],
    staff: { judge: null, synthesis: null, grounding: { fired: false, modelUsed: null } },
    seatPasses: [
      pass('seat1', true, 'Paris.\n\nFinal answer: Paris'),
      pass('seat2', false, 'Final answer: Paris'),
      pass('seat3', false, 'Hmm.'),
    ],
    usage: { promptTokens: 30, completionTokens: 60, reasoningTokens: null },
    money: { gatewayMicros: 15, platformFeeMicros: 1, modeFeeMicros: 2, capCreditMicros: 0, billedMicros: 18, ceilingMicros: 2_000_000 },
    payer: 'service',
    latencyMs: 1500,
    createdAt: '2025-01-01T00:00:00.000Z',
    completedAt: '2025-01-01T00:00:01.500Z',
    ...extra,
  };
}

const SHOWN = {
  method: 'vote',
  answer_kind: 'short_text',
  ballots: [
    { seat: 'seat1', answer: 'paris', read_by: 'text' },
    { seat: 'seat2', answer: 'paris', read_by: 'text' },
    { seat: 'seat3', answer: null, read_by: null },
  ],
  votes: [{ answer: 'paris', votes: 2 }],
  winner: { seat: 'seat1', answer: 'paris' },
  decided_by: 'plurality',
  seats_asked: 3,
  early_stop: false,
  ballot_call: { model_used: 'sim/judge', latency_ms: 120, tokens_in: 300, tokens_out: 12, real_cost_usd: 0.001234 },
  synthesis: 'none',
  answer_line_added: false,
};

/** The same block with every answer hidden: the seats, counts and decision stay. */
const HIDDEN = {
  ...SHOWN,
  ballots: SHOWN.ballots.map((b) => ({ ...b, answer: null })),
  votes: [{ answer: null, votes: 2 }],
  winner: { seat: 'seat1', answer: null },
};

const svcOf = (body: JsonObject): JsonObject => body.svc as JsonObject;
const receiptOf = (body: JsonObject): JsonObject => body.receipt as JsonObject;
const DELETED: Partial<Outcome> = { transcriptDeleted: { at: '2025-01-02T00:00:00.000Z', reason: 'zero_retention' } };

describe('svc.aggregation (issue 52): both Forms, completion and receipt', () => {
  for (const form of [formA, formB]) {
    describe(`Form ${form.form}`, () => {
      it('a completion carries the record in snake case, answers shown as people read them', () => {
        assert.deepEqual(svcOf(form.completion(outcome({ aggregation: VOTE }), false)).aggregation, SHOWN);
      });

      it('null when the outcome recorded none (a mode without aggregation, the express lane)', () => {
        assert.equal(svcOf(form.completion(outcome(), false)).aggregation, null);
        assert.equal(receiptOf(form.receipt(outcome(), true)).aggregation, null);
      });

      it("the receipt shows the answers only with the transcript, as it shows the seats' content", () => {
        const o = outcome({ aggregation: VOTE });
        assert.deepEqual(receiptOf(form.receipt(o, true)).aggregation, SHOWN);
        assert.deepEqual(receiptOf(form.receipt(o, false)).aggregation, HIDDEN);
      });

      it('once the texts were deleted, no answer is shown anywhere: receipt (even with the transcript) and completion', () => {
        const o = outcome({ aggregation: VOTE, ...DELETED });
        assert.deepEqual(receiptOf(form.receipt(o, true)).aggregation, HIDDEN);
        assert.deepEqual(svcOf(form.completion(o, false)).aggregation, HIDDEN);
      });

      it('an early stop, a judge-selected seat with no answer read and no ballot call', () => {
        const select: AggregationRecord<SeatRole> = {
          ...VOTE,
          method: 'select',
          answerKind: null,
          ballots: [
            { role: 'seat1', answer: null, readBy: null },
            { role: 'seat2', answer: 'number 42', readBy: 'text' },
          ],
          votes: [{ answer: 'number 42', votes: 1 }],
          winner: { role: 'seat2', answer: 'number 42' },
          decidedBy: 'judge_select',
          seatsAsked: 2,
          earlyStop: true,
          ballotCall: null,
          synthesis: 'kept',
          answerLineAdded: true,
        };
        const shown = svcOf(form.completion(outcome({ aggregation: select }), false)).aggregation as JsonObject;
        assert.deepEqual(shown, {
          method: 'select',
          answer_kind: null,
          ballots: [
            { seat: 'seat1', answer: null, read_by: null },
            { seat: 'seat2', answer: '42', read_by: 'text' },
          ],
          votes: [{ answer: '42', votes: 1 }],
          winner: { seat: 'seat2', answer: '42' },
          decided_by: 'judge_select',
          seats_asked: 2,
          early_stop: true,
          ballot_call: null,
          synthesis: 'kept',
          answer_line_added: true,
        });
      });
    });
  }

  it("Form B's replayed svc keeps only the spec's replay fields", () => {
    const svc = svcOf(formB.completion(outcome({ aggregation: VOTE }), true));
    assert.equal(svc.aggregation, undefined);
  });

  it('Form A keeps it on a replay, as it keeps its whole svc', () => {
    assert.deepEqual(svcOf(formA.completion(outcome({ aggregation: VOTE }), true)).aggregation, SHOWN);
  });
});

describe('the `aggregated` step on a response stream (issue 52)', () => {
  it('is one more response.in_progress with the step in `quorum`, its fields in snake case', () => {
    const view = {
      id: 'resp_1',
      requestId: 'req_agg',
      status: 'in_progress',
      model: 'QRM:PANL',
      createdAt: new Date('2025-01-01T00:00:00.000Z'),
      outcome: null,
      replayed: false,
      error: null,
      extras: { background: false, instructions: null, metadata: null },
    } as unknown as ResponseView;
    const frame = {
      seq: 5,
      view,
      item: {
        kind: 'step' as const,
        event: { type: 'aggregated' as const, method: 'vote' as const, decidedBy: 'unanimous', earlyStop: true, votes: 2, seats: 2 },
        recordedAt: new Date('2025-01-01T00:00:01.000Z'),
        answerSoFar: null,
      },
    };
    const { type, data } = streamEventJson(frame, formB);
    assert.equal(type, 'response.in_progress');
    assert.deepEqual(data.quorum, {
      step: 'aggregated',
      method: 'vote',
      decided_by: 'unanimous',
      early_stop: true,
      votes: 2,
      seats: 2,
      recorded_at: '2025-01-01T00:00:01.000Z',
    });
  });
});

describe("Form B's estimate says how a first wave was priced (issue 52)", () => {
  const seed = SYSTEM_MODES.find((m) => m.id === 'quorum-panel');
  assert.ok(seed);
  const none = { n: 0, inputTokens: 0, outputTokens: 0, modeFeeMicros: 0 };
  const view = (config: ModeRecord['config']): EstimateView => {
    const mode: ModeRecord = { ...seed, config, version: 1, configHash: 'hash', orgId: null, published: true };
    const classification = classifyHeuristic([{ role: 'user', content: 'Why does ice float on water? Explain.' }]);
    const rates = tierRates(config, { experience: none, plus: none, pro: none });
    const q = quote(
      {
        form: 'B',
        config,
        tier: 'plus',
        classification,
        promptTokens: 40,
        rate: rates.plus,
        keyCeilingMicros: undefined,
        requestedCeilingMicros: undefined,
      },
      () => ({ inputUsdPerMtok: 1, outputUsdPerMtok: 4 }),
    );
    return {
      requestId: 'req_e',
      model: 'QRM:PANL',
      mode,
      classification,
      tier: 'plus',
      rates,
      quote: q,
      timing: { total: 1, classify: 0 },
    };
  };
  const basisOf = (v: EstimateView): JsonObject => (formB.estimate(v).estimate as JsonObject).basis as JsonObject;

  it('`basis.first_wave`: the whole panel priced until its share is observed; null for a mode without one', () => {
    const panel = { ...seed.config, express: 'never' as const };
    const wave = { ...panel, aggregation: { method: 'vote', prose: 'verbatim', tieBreak: 'first', ballot: false, firstWave: 2 } as const };
    assert.deepEqual(basisOf(view(wave)).first_wave, { seats: 2, of: 3, rest_asked_share: 1, basis: 'all_seats_assumed', n: 0 });
    assert.equal(basisOf(view(panel)).first_wave, null);
  });
});
