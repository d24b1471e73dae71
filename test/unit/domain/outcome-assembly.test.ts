import assert from 'node:assert/strict';
import { classifyHeuristic } from '../../../domain/classifier';
import { CostMeter } from '../../../domain/cost-meter';
import { modeConfigHash, SYSTEM_MODES, type ResolvedMode } from '../../../domain/modes';
import {
  assembleCancelledOutcome,
  assembleOutcome,
  substitutions,
  unavailableSeats,
  type AssemblyInput,
} from '../../../domain/outcome-assembly';
import type { PanelResult, SeatPass, SeatRole } from '../../../domain/outcome';

const seed = SYSTEM_MODES[0];
const mode: ResolvedMode = { id: seed.id, ticker: seed.ticker, version: 1, configHash: modeConfigHash(seed.config), config: seed.config };
const classification = classifyHeuristic([{ role: 'user', content: 'Compare two sorting algorithms step by step.' }]);

function pass(role: SeatRole, round: number, modelUsed: string, over: Partial<SeatPass> = {}): SeatPass {
  return {
    role,
    round,
    modelUsed,
    originalModel: null,
    fallbackUsed: false,
    tokensIn: 100,
    tokensOut: 40,
    startedAt: '2026-11-22T10:00:00.000Z',
    endedAt: '2026-11-22T10:00:01.000Z',
    latencyMs: 1_000,
    judgeScore: null,
    isBest: false,
    source: 'service',
    realCostMicros: 500,
    feeRatePpm: 50_000,
    feeMicros: 25,
    content: `${role} round ${round}`,
    finish: 'stop',
    ...over,
  };
}

/** A two-round panel: seat3 never answered; seat2 ran on its backup; the judge preferred seat2 ("answer B"). */
function panelResult(over: Partial<PanelResult> = {}): PanelResult {
  const s1 = pass('seat1', 2, 'openai/gpt-4.1', { judgeScore: 6 });
  const s2 = pass('seat2', 2, 'openai/gpt-4.1', {
    judgeScore: 9,
    fallbackUsed: true,
    originalModel: 'anthropic/claude-sonnet-4',
    finish: 'length',
  });
  return {
    seats: [
      { role: 'seat1', designed: 'openai/gpt-4.1', latest: s1, failures: [] },
      { role: 'seat2', designed: 'anthropic/claude-sonnet-4', latest: s2, failures: ['anthropic/claude-sonnet-4: provider answered 401'] },
      {
        role: 'seat3',
        designed: 'google/gemini-2.5-flash',
        latest: null,
        failures: ['google/gemini-2.5-flash: timeout', 'anthropic/claude-sonnet-4: 503'],
      },
    ],
    passes: [pass('seat1', 1, 'openai/gpt-4.1'), pass('seat2', 1, 'openai/gpt-4.1'), s1, s2],
    late: [],
    rounds: 2,
    deliberation: [],
    judgment: {
      scores: { A: 6, B: 9 },
      best: 'B',
      why: 'Answer B is exact where answer A rounds.',
      divergence: 0.5,
      converged: false,
      contested: { label: 'A', quote: 'about 3', why: 'rounded' },
      factualConflict: true,
    },
    labels: { seat1: 'A', seat2: 'B' },
    judgedBy: 'llm',
    divergenceFirst: 0.7,
    best: 'seat2',
    answer: 'the synthesis',
    finish: 'stop',
    staff: {
      judge: { modelUsed: 'openai/gpt-4.1', latencyMs: 10, fallbackUsed: true, originalModel: 'anthropic/claude-sonnet-4' },
      synthesis: null,
      grounding: { fired: false, modelUsed: null },
    },
    staffUnavailable: [],
    notes: [],
    judgeSeed: 7,
    ...over,
  };
}

function input(over: Partial<AssemblyInput> = {}): AssemblyInput {
  const meter = new CostMeter({ form: 'B', fees: seed.config.fees, depth: 'medium', lane: 'panel', ceilingMicros: 2_000_000 });
  meter.charge({ costMicros: 2_000, source: 'service', tokensIn: 400, tokensOut: 160, reasoningTokens: null });
  return {
    requestId: 'req_1',
    orgId: 'org_1',
    form: 'B',
    billed: true,
    mode,
    tier: 'plus',
    classification,
    lane: 'panel',
    ceilingMicros: 2_000_000,
    panel: panelResult(),
    meter,
    createdAt: '2026-11-22T10:00:00.000Z',
    startedMs: Date.parse('2026-11-22T10:00:00.000Z'),
    completedMs: Date.parse('2026-11-22T10:00:03.500Z'),
    ...over,
  };
}

describe('outcome assembly: what the panel did, as the one model both Forms and the receipt read', () => {
  it('names seats instead of labels, marks only the winning row best, lists substitutions and absent seats', () => {
    const o = assembleOutcome(input());
    assert.deepEqual(o.contestedPassage, { seat: 'seat1', quote: 'about 3', why: 'rounded' });
    assert.equal(o.bestSeatRationale, 'seat2 is exact where seat1 rounds.');
    assert.deepEqual(
      o.seatPasses.map((p) => [p.role, p.round, p.isBest]),
      [
        ['seat1', 1, false],
        ['seat2', 1, false],
        ['seat1', 2, false],
        ['seat2', 2, true],
      ],
    );
    assert.deepEqual(o.bestSeat, { role: 'seat2', modelUsed: 'openai/gpt-4.1', judgeScore: 9, content: 'seat2 round 2' });
    assert.deepEqual(o.substitutions, [
      {
        role: 'seat2',
        original: 'anthropic/claude-sonnet-4',
        used: 'openai/gpt-4.1',
        reason: 'anthropic/claude-sonnet-4: provider answered 401',
      },
    ]);
    assert.deepEqual(o.seatsUnavailable, [{ role: 'seat3', reason: 'google/gemini-2.5-flash: timeout; anthropic/claude-sonnet-4: 503' }]);
    assert.deepEqual(
      [o.seats, o.seatsAnswered, o.converged, o.divergenceFirst, o.divergenceFinal, o.factualConflict],
      [3, 2, false, 0.7, 0.5, true],
    );
    assert.deepEqual(o.engines, ['openai/gpt-4.1']);
    assert.equal(o.answer, 'the synthesis');
    assert.equal(o.finishReason, 'stop', 'a losing or superseded cut-off seat does not set length');
    assert.equal(o.latencyMs, 3_500);
    assert.equal(o.completedAt, '2026-11-22T10:00:03.500Z');
  });

  it('bills a live call from the meter: engines, the 5% platform fee, the per-token mode fee; a test key bills zero', () => {
    const o = assembleOutcome(input());
    // Mode fee: 400 × 0.5 + 160 × 2 = 520; platform fee 5% of 2,000 = 100.
    assert.deepEqual(o.money, {
      gatewayMicros: 2_000,
      platformFeeMicros: 100,
      modeFeeMicros: 520,
      capCreditMicros: 0,
      billedMicros: 2_620,
      ceilingMicros: 2_000_000,
    });
    assert.deepEqual(o.usage, { promptTokens: 400, completionTokens: 160, reasoningTokens: null });
    assert.equal(o.payer, 'service');
    const free = assembleOutcome(input({ billed: false }));
    assert.deepEqual(free.money, {
      gatewayMicros: 0,
      platformFeeMicros: 0,
      modeFeeMicros: 0,
      capCreditMicros: 0,
      billedMicros: 0,
      ceilingMicros: 2_000_000,
    });
  });

  it('Form B over the ceiling: capped, billed the ceiling, the excess as cap credit; finish stays stop', () => {
    const o = assembleOutcome(input({ ceilingMicros: 2_000 }));
    assert.equal(o.status, 'capped');
    assert.deepEqual([o.money.billedMicros, o.money.capCreditMicros], [2_000, 620]);
    assert.equal(o.finishReason, 'stop');
  });

  it('Form A: a skipped step is cost_cap, but length outranks it', () => {
    const meter = new CostMeter({ form: 'A', fees: seed.config.fees, depth: 'medium', lane: 'panel', ceilingMicros: 6_000 });
    meter.charge({ costMicros: 500, source: 'service', tokensIn: 10, tokensOut: 10, reasoningTokens: null });
    assert.equal(
      meter.affords([{ engine: { inputUsdPerMtok: 1, outputUsdPerMtok: 1, ownKey: false }, tokensIn: 1_000, maxOut: 1_000 }]),
      false,
    );
    const capped = assembleOutcome(input({ form: 'A', meter, ceilingMicros: 6_000 }));
    assert.deepEqual([capped.status, capped.finishReason, capped.money.billedMicros], ['capped', 'cost_cap', 5_525]);
    const cut = assembleOutcome(input({ form: 'A', meter, ceilingMicros: 6_000, panel: panelResult({ finish: 'length' }) }));
    assert.equal(cut.finishReason, 'length');
  });

  it('express lane: no judgment, so converged null and the express rationale; own-key passes make the payer own_keys', () => {
    const only = pass('seat1', 1, 'openai/gpt-4.1-mini', { source: 'own_key' });
    const panel = panelResult({
      seats: [{ role: 'seat1', designed: 'openai/gpt-4.1-mini', latest: only, failures: [] }],
      passes: [only],
      rounds: 1,
      judgment: null,
      labels: {},
      judgedBy: 'express_lane',
      divergenceFirst: null,
      best: 'seat1',
      answer: only.content,
    });
    const o = assembleOutcome(input({ lane: 'express', panel }));
    assert.deepEqual(
      [o.lane, o.converged, o.divergenceFinal, o.contestedPassage, o.bestSeatJudgedBy],
      ['express', null, null, null, 'express_lane'],
    );
    assert.equal(o.bestSeatRationale, 'Express lane: one seat answered alone.');
    assert.equal(o.payer, 'own_keys');
  });

  it('a substitution without a failure gives the plan note, or says the designed engine is not available', () => {
    const s = pass('seat1', 1, 'sim/alpha-plus');
    const seats = [{ role: 'seat1' as const, designed: 'openai/gpt-4.1', latest: s, failures: [] }];
    assert.equal(
      substitutions(seats, ['openai/gpt-4.1: no openai credentials configured'])[0].reason,
      'openai/gpt-4.1: no openai credentials configured',
    );
    assert.equal(substitutions(seats, [])[0].reason, 'the designed engine is not available here');
    assert.deepEqual(unavailableSeats([{ role: 'seat2', designed: 'x/y', latest: null, failures: [] }]), [
      { role: 'seat2', reason: 'no engine could run' },
    ]);
  });

  it("cancelled (issue 40): no answer; the passes that answered billed at cost, the 5% fee and Form B's per-token fee; no Form A surcharge", () => {
    // One seat answered before the cancel: 100 tokens in, 40 out, 500 µ$ at cost on the service's keys.
    const cancelled = (form: 'A' | 'B', billed = true) => {
      const meter = new CostMeter({ form, fees: seed.config.fees, depth: 'medium', lane: 'panel', ceilingMicros: 2_000_000 });
      meter.charge({ costMicros: 500, source: 'service', tokensIn: 100, tokensOut: 40, reasoningTokens: null });
      // The panel's result is not read: a cancelled call has none.
      return assembleCancelledOutcome({
        ...input({ form, billed, meter }),
        passes: [pass('seat1', 1, 'openai/gpt-4.1', { isBest: true })],
        judge: null,
        seats: 3,
      });
    };
    const b = cancelled('B');
    assert.equal(b.status, 'cancelled');
    assert.deepEqual([b.answer, b.bestSeat, b.seats, b.seatsAnswered, b.rounds], ['', null, 3, 1, 1]);
    assert.equal(b.seatPasses[0].isBest, false);
    // Form B's fee by hand: the mode's per-Mtok input rate on 100 tokens and four times it on 40.
    const rate = seed.config.fees.perMtokInputUsd;
    const modeFee = Math.round(100 * rate + 40 * rate * 4);
    assert.deepEqual(
      [b.money.gatewayMicros, b.money.platformFeeMicros, b.money.modeFeeMicros, b.money.billedMicros],
      [500, 25, modeFee, 525 + modeFee],
    );
    const a = cancelled('A');
    assert.deepEqual([a.money.modeFeeMicros, a.money.billedMicros], [0, 525]);
    assert.equal(cancelled('B', false).money.billedMicros, 0);
  });
});
