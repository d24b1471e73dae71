import assert from 'node:assert/strict';
import { formB } from '../../../api/forms/b';
import type { JsonObject } from '../../../api/forms/json';
import type { KeyPrincipal } from '../../../operations/principal';
import { callStatsByTier, firstWaveCounts, type CallStatsRow } from '../../../db/repositories/mode-call-stats';
import { classifyHeuristic } from '../../../domain/classifier';
import { MIN_SAMPLE, quote, tierRate, tierRates } from '../../../domain/estimate';
import { SYSTEM_MODES, type ModeConfig, type ModeRecord } from '../../../domain/modes';
import { createEngines } from '../../../engines';
import { callQuoteInput, catalogPrices, type EstimateView } from '../../../operations/estimate';
import { settingsOf } from '../../harness/settings';

/**
 * Issue 52: a first wave's share is read from the mode's own recorded calls (`mode_call_stats.wave_calls` and
 * `wave_all_asked`, counted as each call settles) into every quote of the mode: the whole panel is priced until
 * MIN_SAMPLE such calls are recorded on the tier, then the share of them that asked every seat.
 */
describe("a first wave's observed share, from the recorded calls to the quote", () => {
  it('a settled call counts as a first-wave call when it recorded its seats asked, as all asked unless it stopped early', () => {
    assert.deepEqual(firstWaveCounts(undefined), { waveCalls: 0, allAsked: 0 });
    assert.deepEqual(firstWaveCounts({ seatsAsked: 2, earlyStop: true }), { waveCalls: 1, allAsked: 0 });
    assert.deepEqual(firstWaveCounts({ seatsAsked: 3, earlyStop: false }), { waveCalls: 1, allAsked: 1 });
  });

  it("each tier's row gives its counts; a tier without a row has none", () => {
    const row: CallStatsRow = {
      tier: 'plus',
      n: 30,
      input_tokens: '3000',
      output_tokens: '600',
      mode_fee_micros: '900',
      wave_calls: 25,
      wave_all_asked: 10,
    };
    const stats = callStatsByTier([row]);
    assert.deepEqual(stats.plus, { n: 30, inputTokens: 3000, outputTokens: 600, modeFeeMicros: 900, wave: { n: 25, allAsked: 10 } });
    assert.deepEqual(stats.pro.wave, { n: 0, allAsked: 0 });
  });

  const seed = SYSTEM_MODES.find((m) => m.id === 'quorum-panel');
  assert.ok(seed);
  // On the panel, one round, two seats first: the plus tier has three.
  const config: ModeConfig = {
    ...seed.config,
    express: 'never',
    critique: 'never',
    aggregation: { method: 'vote', prose: 'verbatim', tieBreak: 'first', ballot: false, firstWave: 2 },
  };
  const mode: ModeRecord = { ...seed, config, version: 1, configHash: 'hash', orgId: 'org_1', published: true };
  const deps = { form: 'B' as const, engines: createEngines({ ...settingsOf({}) }) };
  const auth: KeyPrincipal = {
    via: 'key',
    edge: 'api',
    keyId: 'key_1',
    orgId: 'org_1',
    keyKind: 'live',
    scopes: [],
    allowedModes: null,
    limits: { requestsPerMinute: null, concurrency: null, maxInputTokens: null, maxCostMicros: null },
    isOwner: true,
  };
  const messages = [{ role: 'user' as const, content: 'Which is larger, 7 or 9? Explain.' }];
  const classification = classifyHeuristic(messages);
  const none = { n: 0, inputTokens: 0, outputTokens: 0, modeFeeMicros: 0 };
  /** The Form B estimate of a plus-tier call with the plus tier's first-wave counts `wave`, as the estimate reads them. */
  const estimated = (wave: { n: number; allAsked: number }) => {
    const rates = tierRates(config, { experience: none, plus: { ...none, wave }, pro: none });
    const q = quote(
      callQuoteInput(deps, auth, { mode, tier: 'plus', classification, promptTokens: 40, rates, ownFamilies: new Set() }),
      catalogPrices(deps.engines),
    );
    assert.ok(q);
    const view: EstimateView = {
      requestId: 'req_1',
      model: mode.ticker,
      mode,
      classification,
      tier: 'plus',
      rates,
      quote: q,
      timing: { total: 1, classify: 0 },
    };
    const basis = (formB.estimate(view).estimate as JsonObject).basis as JsonObject;
    return { q, firstWave: basis.first_wave };
  };

  it('the rate carries the counts whatever the rate itself is based on', () => {
    assert.deepEqual(tierRate(config, { ...none, wave: { n: 5, allAsked: 2 } }).wave, { n: 5, allAsked: 2 });
    assert.equal(tierRate(config, none).wave, undefined);
  });

  it('below MIN_SAMPLE first-wave calls every seat is priced and the basis says so, with n', () => {
    const few = estimated({ n: MIN_SAMPLE - 1, allAsked: 0 });
    assert.deepEqual(few.firstWave, { seats: 2, of: 3, rest_asked_share: 1, basis: 'all_seats_assumed', n: MIN_SAMPLE - 1 });
    assert.equal(few.q.gatewayMicros, estimated({ n: 0, allAsked: 0 }).q.gatewayMicros);
  });

  it('from MIN_SAMPLE on, the observed share of calls that asked every seat, and a cheaper quote when it is below 1', () => {
    const observed = estimated({ n: MIN_SAMPLE, allAsked: 5 });
    assert.deepEqual(observed.firstWave, { seats: 2, of: 3, rest_asked_share: 5 / MIN_SAMPLE, basis: 'observed', n: MIN_SAMPLE });
    const all = estimated({ n: MIN_SAMPLE, allAsked: MIN_SAMPLE });
    assert.deepEqual(all.firstWave, { seats: 2, of: 3, rest_asked_share: 1, basis: 'observed', n: MIN_SAMPLE });
    assert.equal(all.q.gatewayMicros, estimated({ n: 0, allAsked: 0 }).q.gatewayMicros, 'every call asked: the whole panel');
    assert.ok(observed.q.gatewayMicros < all.q.gatewayMicros);
  });
});
