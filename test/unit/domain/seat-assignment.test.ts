import assert from 'node:assert/strict';
import { SYSTEM_MODES, type ModeConfig } from '../../../domain/modes';
import { designedSeats, laneFor, seatingFor, type SeatingContext } from '../../../domain/seat-assignment';
import { findEngine } from '../../../engines/catalog';

const panel = SYSTEM_MODES.find((m) => m.id === 'quorum-panel')?.config as ModeConfig;
const withExpress = (express: ModeConfig['express']): ModeConfig => ({ ...panel, express });
const context = (over: Partial<SeatingContext> = {}): SeatingContext => ({
  find: findEngine,
  // No provider keys configured: only the simulated engines run.
  serviceCanRun: (id) => id.startsWith('sim/'),
  ownFamilies: new Set(),
  simOnly: false,
  ...over,
});
const ids = (chain: { engineId: string }[]): string[] => chain.map((e) => e.engineId);

describe('seat planning: one lane rule, one seating', () => {
  it('the experience tier is the express lane whatever the mode says; otherwise the mode, then the classifier', () => {
    for (const express of ['auto', 'always', 'never'] as const) {
      assert.equal(laneFor(withExpress(express), 'experience', { lane: 'panel' }), 'express', express);
    }
    assert.equal(laneFor(withExpress('always'), 'pro', { lane: 'panel' }), 'express');
    assert.equal(laneFor(withExpress('never'), 'plus', { lane: 'express' }), 'panel');
    assert.equal(laneFor(withExpress('auto'), 'plus', { lane: 'express' }), 'express');
    assert.equal(laneFor(withExpress('auto'), 'pro', { lane: 'panel' }), 'panel');
  });

  it("designs the express tier's one seat on the express lane, the tier's panel otherwise, plus when the tier has none", () => {
    assert.deepEqual(designedSeats(panel, 'pro', 'express'), ['openai/gpt-4.1-mini']);
    assert.deepEqual(designedSeats(panel, 'pro', 'panel'), ['openai/gpt-5', 'anthropic/claude-opus-4-1', 'google/gemini-2.5-pro']);
    const noPro: ModeConfig = { ...panel, tiers: { experience: panel.tiers.experience, plus: panel.tiers.plus } };
    assert.deepEqual(designedSeats(noPro, 'pro', 'panel'), panel.tiers.plus?.seats);
  });

  it("with no provider keys, the tier's sim engines stand in and the receipt notes say why", () => {
    const seating = seatingFor(panel, 'plus', 'panel', context());
    assert.deepEqual(
      seating.seats.map((s) => s.role),
      ['seat1', 'seat2', 'seat3'],
    );
    assert.deepEqual(
      seating.seats.map((s) => s.designed),
      panel.tiers.plus?.seats,
    );
    assert.deepEqual(ids(seating.seats[0].chain), ['sim/alpha-plus', 'sim/beta-plus']);
    assert.deepEqual(ids(seating.seats[2].chain), ['sim/gamma-plus', 'sim/alpha-plus']);
    assert.ok(seating.notes.includes('openai/gpt-4.1: no openai credentials configured'));
    assert.deepEqual(ids(seating.judge.chain), ['sim/alpha-plus', 'sim/beta-plus']);
    assert.deepEqual(ids(seating.synthesis.chain), ['sim/beta-plus', 'sim/gamma-plus']);
    const express = seatingFor(panel, 'pro', 'express', context());
    assert.deepEqual(ids(express.seats[0].chain), ['sim/alpha-experience', 'sim/beta-experience']);
  });

  it("a configured stand-in (the local model) takes the sim engines' place for seats and staff; a test key stays on sim", () => {
    const local = { id: 'local/smollm2', family: 'local', inputUsdPerMtok: 0, outputUsdPerMtok: 0, backup: 'sim/alpha-experience' };
    const ctx = context({ find: (id) => (id === local.id ? local : findEngine(id)), standIn: local.id });
    const seating = seatingFor(panel, 'plus', 'panel', ctx);
    for (const chain of [...seating.seats.map((s) => s.chain), seating.judge.chain, seating.synthesis.chain])
      assert.deepEqual(ids(chain), ['local/smollm2', 'sim/alpha-experience']);
    assert.equal(seatingFor(panel, 'plus', 'panel', { ...ctx, simOnly: true }).seats[0].chain[0]?.engineId, 'sim/alpha-plus');
    assert.deepEqual(
      seatingFor(panel, 'plus', 'panel', { ...ctx, simStandIns: false }).seats[0].chain,
      [],
      'production: no stand-in at all',
    );
  });

  it("follows backups to engines that can run, seats the organisation's own-key families on its key, staff on the service's", () => {
    const seating = seatingFor(
      panel,
      'plus',
      'panel',
      context({ serviceCanRun: (id) => id.startsWith('openai/'), ownFamilies: new Set(['google']) }),
    );
    assert.deepEqual(seating.seats[0].chain, [
      { engineId: 'openai/gpt-4.1', inputUsdPerMtok: 2, outputUsdPerMtok: 8, ownKey: false },
      { engineId: 'google/gemini-2.5-flash', inputUsdPerMtok: 0.3, outputUsdPerMtok: 2.5, ownKey: true },
    ]);
    // claude-sonnet-4 cannot run; its backup gpt-4.1 can, whose backup gemini-2.5-flash runs on the organisation's key.
    assert.deepEqual(
      seating.seats[1].chain.map((e) => [e.engineId, e.ownKey]),
      [
        ['openai/gpt-4.1', false],
        ['google/gemini-2.5-flash', true],
      ],
    );
    assert.deepEqual(
      seating.seats[2].chain.map((e) => [e.engineId, e.ownKey]),
      [
        ['google/gemini-2.5-flash', true],
        ['openai/gpt-4.1', false],
      ],
    );
    assert.ok(seating.notes.includes('anthropic/claude-sonnet-4: no anthropic credentials configured'));
    // The judge (claude-sonnet-4) cannot run; its configured backup gpt-4.1 can. Own keys never judge.
    assert.deepEqual(ids(seating.judge.chain), ['openai/gpt-4.1']);
    assert.deepEqual(ids(seating.synthesis.chain), ['openai/gpt-4.1']);
  });

  it('a test key plans every seat and staff engine on sim, even where real engines could run', () => {
    const seating = seatingFor(panel, 'pro', 'panel', context({ serviceCanRun: () => true, simOnly: true }));
    for (const s of [...seating.seats, seating.judge, seating.synthesis])
      assert.ok(
        ids(s.chain).every((id) => id.startsWith('sim/')),
        s.designed,
      );
    assert.deepEqual(seating.notes, []);
  });
});
