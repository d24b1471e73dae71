import assert from 'node:assert/strict';
import { classifyHeuristic } from '../../../domain/classifier';
import { quote, tierRate, worstCaseGatewayMicros, type QuoteInput } from '../../../domain/estimate';
import { SYSTEM_MODES } from '../../../domain/modes';
import type { TokenPrices } from '../../../domain/pricing';

/**
 * Issue 38 item 11: a call whose mode names a classifier model pays for that model's call (spec 01: request-level
 * counters include the classifier's tokens), so its quote prices the call: the prompt it reads at the engine's input
 * price and half its 200-token allowance at its output price, with the 5% platform fee and the mode's per-token fee.
 */
describe('the quote prices the classifier model’s call', () => {
  const PRICES: Record<string, TokenPrices> = {};
  const prices = (id: string): TokenPrices => (PRICES[id] ??= { inputUsdPerMtok: 2, outputUsdPerMtok: 8 });
  // Whatever the panel's engines, the classifier here costs $0.4 / $1.6 per Mtok.
  PRICES['test/classifier'] = { inputUsdPerMtok: 0.4, outputUsdPerMtok: 1.6 };
  const panel = SYSTEM_MODES.find((m) => m.id === 'quorum-panel');
  assert.ok(panel);
  const withClassifier = { ...panel.config, staff: { ...panel.config.staff, classifier: { engine: 'test/classifier' } } };
  const messages = [{ role: 'user' as const, content: 'Compare two sorting algorithms step by step, with their trade-offs.' }];
  const input = (classifierPromptTokens: number | undefined): QuoteInput => ({
    form: 'B',
    config: withClassifier,
    tier: 'plus',
    classification: classifyHeuristic(messages),
    promptTokens: 40,
    rate: tierRate(withClassifier, { n: 0, inputTokens: 0, outputTokens: 0, modeFeeMicros: 0 }),
    classifierPromptTokens,
    keyCeilingMicros: undefined,
    requestedCeilingMicros: undefined,
  });

  it('adds the classifier call at its prices, the platform fee on it and the mode fee on its tokens', () => {
    const without = quote(input(undefined), prices);
    const with_ = quote(input(300), prices);
    assert.ok(without && with_);
    // 300 tokens in at $0.4 per Mtok, 100 out at $1.6: 120 + 160 µ$.
    const engine = 300 * 0.4 + 100 * 1.6;
    assert.equal(with_.gatewayMicros - without.gatewayMicros, engine);
    // The fee is rounded once on the summed cost: it moves by the 5% of the engines' new total less the old one's.
    assert.equal(with_.platformFeeMicros, Math.round(with_.gatewayMicros / 20));
    // The mode's fee: $0.5 per Mtok in, 4x out, on the classifier's 300 + 100 tokens too.
    assert.equal(with_.modeFeeMicros - without.modeFeeMicros, 300 * 0.5 + 100 * 2);
    assert.equal(with_.grossMicros, with_.gatewayMicros + with_.platformFeeMicros + with_.modeFeeMicros);
  });

  it("a plan's hold counts the classifier's whole allowance", () => {
    const shape = { config: withClassifier, tier: 'plus' as const, classification: classifyHeuristic(messages), promptTokens: 40 };
    const without = worstCaseGatewayMicros(shape, prices);
    const with_ = worstCaseGatewayMicros({ ...shape, classifierPromptTokens: 300 }, prices);
    assert.ok(without !== undefined && with_ !== undefined);
    assert.equal(with_ - without, 300 * 0.4 + 200 * 1.6);
  });

  it('a mode without a classifier model prices no classifier call', () => {
    const plain = { ...input(300), config: panel.config };
    assert.deepEqual(quote(plain, prices), quote({ ...plain, classifierPromptTokens: undefined }, prices));
  });
});
