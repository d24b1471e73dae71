import assert from 'node:assert/strict';
import { CATALOG } from '../../../engines/catalog';
import { modeTemplate, validateMode, type ValidationContext } from '../../../domain/mode-spec';
import { modeConfigHash } from '../../../domain/modes';
import { quote } from '../../../domain/estimate';
import { countTokens } from '../../../domain/tokens';
import { classifyHeuristic } from '../../../domain/classifier';

/** Issue 39 item 3: a seat's tuning (temperature, seed, system prompt) as a mode spec sets it, checked and compiled. */
const ctx: ValidationContext = {
  form: 'B',
  find: (id) => CATALOG.find((e) => e.id === id),
  canRun: () => true,
  floor: { perMtokUsd: 0.05, surchargeUsd: 0.0005 },
  via: 'key',
  hasOrg: true,
  system: false,
  tickerTaken: () => false,
};
const PLUS = ['openai/gpt-4.1', 'anthropic/claude-sonnet-4', 'google/gemini-2.5-flash'];

const PRO = ['openai/gpt-5', 'anthropic/claude-opus-4-1', 'google/gemini-2.5-pro'];

/** The template with fixed rows (no auto pool), the plus row as given. */
function withPlus(plus: unknown[]): Record<string, unknown> {
  const spec = modeTemplate();
  delete spec.auto;
  return { ...spec, seats_by_tier: { experience: ['openai/gpt-4.1-mini'], plus, pro: PRO } };
}

function refusals(plus: unknown[]): { code: string; path: string }[] {
  const v = validateMode(withPlus(plus), ctx);
  return v.ok ? [] : v.refusals.map((r) => ({ code: r.code, path: r.path }));
}

describe('Seat tuning in a mode spec', () => {
  it('compiles each seat’s temperature, seed and system prompt into its row, in seat order', () => {
    const v = validateMode(
      withPlus([
        { engine: 'openai/gpt-4.1', temperature: 0.3, seed: 7, system_prompt: 'Be brief.' },
        'anthropic/claude-sonnet-4',
        { engine: 'google/gemini-2.5-flash', seed: 9 },
      ]),
      ctx,
    );
    assert.ok(v.ok, JSON.stringify(v));
    assert.deepEqual(v.mode.config.tiers.plus?.tunings, [{ temperature: 0.3, seed: 7, systemPrompt: 'Be brief.' }, null, { seed: 9 }]);
  });

  it('an untuned spec compiles without tunings, so every existing mode keeps its configuration hash', () => {
    const v = validateMode(withPlus(PLUS), ctx);
    const objects = validateMode(withPlus(PLUS.map((engine) => ({ engine }))), ctx);
    assert.ok(v.ok && objects.ok);
    assert.equal(v.mode.config.tiers.plus?.tunings, undefined);
    assert.equal(modeConfigHash(objects.mode.config), modeConfigHash(v.mode.config));
  });

  it('one engine may sit twice only tuned apart', () => {
    const tuned = [{ engine: 'openai/gpt-4.1', seed: 1 }, { engine: 'openai/gpt-4.1', seed: 2 }, 'google/gemini-2.5-flash'];
    assert.deepEqual(refusals(tuned), []);
    assert.deepEqual(refusals([{ engine: 'openai/gpt-4.1', seed: 1 }, { engine: 'openai/gpt-4.1', seed: 1 }, 'google/gemini-2.5-flash']), [
      { code: 'duplicate_seat_engine', path: 'seats_by_tier.plus[1]' },
    ]);
  });

  it('refuses what the engine cannot take, and values out of range, each at its own path', () => {
    assert.deepEqual(refusals(['openai/gpt-4.1', { engine: 'anthropic/claude-sonnet-4', seed: 3 }, 'google/gemini-2.5-flash']), [
      { code: 'invalid_value', path: 'seats_by_tier.plus[1].seed' },
    ]);
    assert.deepEqual(
      refusals([
        { engine: 'openai/gpt-4.1', temperature: 2.5, seed: -1, system_prompt: '' },
        'anthropic/claude-sonnet-4',
        { engine: 'google/gemini-2.5-flash', seed: 1.5 },
      ]).map((r) => r.path),
      [
        'seats_by_tier.plus[0].temperature',
        'seats_by_tier.plus[0].seed',
        'seats_by_tier.plus[0].system_prompt',
        'seats_by_tier.plus[2].seed',
      ],
    );
    assert.deepEqual(refusals([{ engine: 'openai/gpt-4.1', top_k: 5 }, ...PLUS.slice(1)]), [
      { code: 'invalid_request', path: 'seats_by_tier.plus[0].top_k' },
    ]);
  });

  it('a reasoning engine takes no temperature', () => {
    const reasoning = CATALOG.find((e) => e.reasoning && e.tier === 'plus');
    assert.ok(reasoning, 'the catalog has a plus-tier reasoning engine');
    const r = refusals([{ engine: reasoning.id, temperature: 0.5 }, 'anthropic/claude-sonnet-4', 'google/gemini-2.5-flash']);
    assert.deepEqual(r, [{ code: 'invalid_value', path: 'seats_by_tier.plus[0].temperature' }]);
  });

  it('the quote counts each tuned seat’s system prompt on every pass', () => {
    const prompt = 'You are a careful analyst. Answer precisely, and show the one step that matters most.';
    const plain = validateMode(withPlus(PLUS), ctx);
    const tuned = validateMode(withPlus([{ engine: PLUS[0], system_prompt: prompt }, ...PLUS.slice(1)]), ctx);
    assert.ok(plain.ok && tuned.ok);
    const classification = { ...classifyHeuristic([{ role: 'user', content: 'Why?' }]), lane: 'panel' as const, depth: 'light' as const };
    const priced = (config: typeof plain.mode.config) =>
      quote(
        {
          form: 'B',
          config,
          tier: 'plus',
          classification,
          promptTokens: 100,
          rate: { inputMicrosPerToken: 0, outputMicrosPerToken: 0, n: 0, basis: 'api_calls' },
          keyCeilingMicros: undefined,
          requestedCeilingMicros: undefined,
        },
        (id) => CATALOG.find((e) => e.id === id),
      );
    const [a, b] = [priced(plain.mode.config), priced(tuned.mode.config)];
    assert.ok(a && b);
    const seat = CATALOG.find((e) => e.id === PLUS[0]);
    assert.ok(seat);
    // The seat reads the prompt once per round: its cost rises by the prompt's tokens at its input price, each round.
    const extra = Math.round(((countTokens(prompt) * seat.inputUsdPerMtok) / 1e6) * 1e6) * a.rounds;
    assert.ok(Math.abs(b.gatewayMicros - a.gatewayMicros - extra) <= a.rounds, `${b.gatewayMicros - a.gatewayMicros} vs ${extra}`);
  });
});
