import assert from 'node:assert/strict';
import { SYSTEM_MODES, type ModeConfig } from '../../../domain/modes';
import { seatingFor, type SeatingContext } from '../../../domain/seat-assignment';
import { seatingNow, simulatedFor } from '../../../domain/seating';
import { findEngine } from '../../../engines/catalog';

const config = (id: string): ModeConfig => {
  const found = SYSTEM_MODES.find((m) => m.id === id);
  if (!found) throw new Error(id);
  return found.config;
};
const context = (over: Partial<SeatingContext> = {}): SeatingContext => ({
  find: findEngine,
  serviceCanRun: (id) => id.startsWith('sim/'),
  ownFamilies: new Set(),
  simOnly: false,
  simStandIns: true,
  ...over,
});
const onlyOpenAi = context({ serviceCanRun: (id) => id.startsWith('sim/') || id.startsWith('openai/') });

describe('seating: who would answer a mode now, from the call’s own seating', () => {
  it('with only OpenAI configured, the Claude and Gemini seats show the real backup that answers them, not a sim stand-in', () => {
    const plus = seatingNow(config('quorum-panel'), onlyOpenAi).find((t) => t.tier === 'plus');
    assert.deepEqual(
      plus?.seats.map((s) => [s.designed, s.answers]),
      [
        ['openai/gpt-4.1', 'openai/gpt-4.1'],
        ['anthropic/claude-sonnet-4', 'openai/gpt-4.1'],
        ['google/gemini-2.5-flash', 'openai/gpt-4.1'],
      ],
    );
    assert.deepEqual(plus?.judge, { designed: 'anthropic/claude-sonnet-4', answers: 'openai/gpt-4.1' });
    assert.deepEqual(plus?.families, ['openai']);
    assert.deepEqual(simulatedFor(seatingNow(config('quorum-panel'), onlyOpenAi)), []);
  });

  it('says exactly what the call plans, seat by seat, on every tier and lane', () => {
    for (const ctx of [context(), onlyOpenAi, context({ simOnly: true }), context({ simStandIns: false })])
      for (const id of ['quorum-panel', 'quorum-debate', 'quorum-express'])
        for (const t of seatingNow(config(id), ctx)) {
          const seating = seatingFor(config(id), t.tier, t.lane, ctx);
          assert.deepEqual(
            t.seats.map((s) => s.answers),
            seating.seats.map((s) => s.chain[0]?.engineId ?? null),
          );
        }
  });

  it('an express mode lists its one seat and no judge or synthesis; the experience tier of a panel mode likewise', () => {
    const express = seatingNow(config('quorum-express'), context());
    assert.deepEqual(
      express.map((t) => [t.tier, t.lane, t.seats.length, t.judge, t.synthesis]),
      [['experience', 'express', 1, null, null]],
    );
    assert.deepEqual(express[0].families, ['sim']);
    assert.deepEqual(simulatedFor(express), ['openai/gpt-4.1-mini'], 'only the seat: the staff are never called');
    const panel = seatingNow(config('quorum-panel'), context());
    assert.deepEqual(
      panel.map((t) => [t.tier, t.lane, t.judge === null]),
      [
        ['experience', 'express', true],
        ['plus', 'panel', false],
        ['pro', 'panel', false],
      ],
    );
  });

  it('with no provider key and no stand-in (production), nothing answers and nothing is simulated', () => {
    const seating = seatingNow(config('quorum-panel'), context({ simStandIns: false }));
    assert.ok(seating.every((t) => t.seats.every((s) => s.answers === null) && t.families.length === 0));
    assert.deepEqual(simulatedFor(seating), []);
  });
});
