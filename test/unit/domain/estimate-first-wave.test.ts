import assert from 'node:assert/strict';
import { classifyHeuristic } from '../../../domain/classifier';
import {
  MIN_SAMPLE,
  projectedSeatsMicros,
  quote,
  tierRate,
  worstCaseGatewayMicros,
  type QuoteInput,
  type WaveStats,
} from '../../../domain/estimate';
import { SYSTEM_MODES, type ModeConfig } from '../../../domain/modes';
import type { TokenPrices } from '../../../domain/pricing';

/**
 * Issue 52: a mode with `aggregation.firstWave` asks two seats first and the third only when they disagree, and a seat
 * never asked is not billed. The quote prices what is expected: the wave's seats always, the rest times the share of
 * calls that asked every seat, observed once there are enough calls, else 1 (the whole panel). A plan's hold (the
 * worst case) still covers every seat.
 */
describe('the quote of a first-wave mode', () => {
  const prices = (): TokenPrices => ({ inputUsdPerMtok: 2, outputUsdPerMtok: 8 });
  const panel = SYSTEM_MODES.find((m) => m.id === 'quorum-panel');
  assert.ok(panel);
  // On the panel, one round: three seats, the judge, the synthesis.
  const base: ModeConfig = { ...panel.config, express: 'never', critique: 'never' };
  const aggregation = { method: 'vote', prose: 'verbatim', tieBreak: 'first', ballot: false } as const;
  const wave: ModeConfig = { ...base, aggregation: { ...aggregation, firstWave: 2 } };
  const allAtOnce: ModeConfig = { ...base, aggregation };
  const plus = base.tiers.plus;
  assert.ok(plus && plus.seats.length === 3);
  const twoSeats: ModeConfig = { ...base, tiers: { ...base.tiers, plus: { seats: plus.seats.slice(0, 2) } }, aggregation };
  const messages = [{ role: 'user' as const, content: 'What is the capital of France?' }];
  const input = (config: ModeConfig, waveStats?: WaveStats): QuoteInput => ({
    form: 'B',
    config,
    tier: 'plus',
    classification: classifyHeuristic(messages),
    promptTokens: 40,
    rate: tierRate(config, { n: 0, inputTokens: 0, outputTokens: 0, modeFeeMicros: 0 }),
    keyCeilingMicros: undefined,
    requestedCeilingMicros: undefined,
    waveStats,
  });
  const q = (config: ModeConfig, waveStats?: WaveStats) => {
    const priced = quote(input(config, waveStats), prices);
    assert.ok(priced);
    return priced;
  };
  const money = (x: ReturnType<typeof q>) => [x.gatewayMicros, x.platformFeeMicros, x.modeFeeMicros, x.grossMicros];

  it('without observed calls every seat is priced (p = 1), and the quote says so', () => {
    const priced = q(wave);
    assert.deepEqual(money(priced), money(q(allAtOnce)));
    assert.deepEqual(priced.firstWave, { firstWave: 2, seats: 3, restAskedShare: 1, basis: 'all_seats_assumed', n: 0 });
    // Too few calls: still the whole panel.
    const few = q(wave, { n: MIN_SAMPLE - 1, allAsked: 0 });
    assert.deepEqual(money(few), money(priced));
    assert.deepEqual(few.firstWave, { firstWave: 2, seats: 3, restAskedShare: 1, basis: 'all_seats_assumed', n: MIN_SAMPLE - 1 });
  });

  it('with enough calls, the third seat (and what the judge and synthesis read of it) at the observed share', () => {
    const never = q(wave, { n: 40, allAsked: 0 });
    const always = q(wave, { n: 40, allAsked: 40 });
    const half = q(wave, { n: 40, allAsked: 20 });
    assert.deepEqual(half.firstWave, { firstWave: 2, seats: 3, restAskedShare: 0.5, basis: 'observed', n: 40 });
    // Never asked: exactly a two-seat panel; always asked: exactly the whole panel.
    assert.deepEqual(money(never), money(q(twoSeats)));
    assert.deepEqual(money(always), money(q(allAtOnce)));
    // Half the calls: half-way between, to a micro-dollar or two of rounding.
    for (const [i, part] of money(half).entries()) {
      const mid = (money(never)[i] + money(always)[i]) / 2;
      assert.ok(Math.abs(part - mid) <= 2, `part ${i}: ${part} is not about ${mid}`);
    }
  });

  it("a plan's hold and the seats' projected cost: the hold covers every seat whatever was observed", () => {
    const shape = (config: ModeConfig, waveStats?: WaveStats) => ({
      config,
      tier: 'plus' as const,
      classification: classifyHeuristic(messages),
      promptTokens: 40,
      waveStats,
    });
    assert.equal(worstCaseGatewayMicros(shape(wave, { n: 40, allAsked: 0 }), prices), worstCaseGatewayMicros(shape(allAtOnce), prices));
    assert.equal(projectedSeatsMicros(shape(wave, { n: 40, allAsked: 0 }), prices), projectedSeatsMicros(shape(twoSeats), prices));
  });

  it('a mode without a first wave, or a call on the express lane, reports none', () => {
    assert.equal(q(allAtOnce).firstWave, null);
    assert.equal(q(base).firstWave, null);
    assert.equal(q({ ...wave, express: 'always' }).firstWave, null);
  });
});
