import assert from 'node:assert/strict';
import { CATALOG, enginesOf, findEngine } from '../../../engines';
import { engineCostMicros } from '../../../domain/pricing';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { countMessagesTokens, countMessagesTokensAsSent, countTokens } from '../../../domain/tokens';

describe('engines: catalog', () => {
  it('has unique family/model ids, sane limits and prices, and backups that exist in another family of the same tier', () => {
    assert.equal(new Set(CATALOG.map((s) => s.id)).size, CATALOG.length);
    for (const s of CATALOG) {
      assert.ok(s.id.startsWith(`${s.family}/`), s.id);
      assert.ok(s.inputUsdPerMtok > 0 && s.outputUsdPerMtok >= s.inputUsdPerMtok, s.id);
      assert.ok(s.contextTokens >= 100_000 && s.maxOutputTokens >= 2_048 && s.maxOutputTokens <= s.contextTokens, s.id);
      const backup = findEngine(s.backup);
      assert.ok(backup, `${s.id}: backup ${s.backup} missing`);
      assert.equal(backup.tier, s.tier, `${s.id}: backup in another tier`);
      if (s.family === 'sim') assert.equal(backup.family, 'sim');
      else assert.notEqual(backup.family, s.family, `${s.id}: backup in the same family`);
    }
  });

  it('offers at least three real families per tier, meta only through bedrock', () => {
    for (const tier of ['experience', 'plus', 'pro'] as const) {
      const families = new Set(
        enginesOf({ tier })
          .filter((s) => s.family !== 'sim')
          .map((s) => s.family),
      );
      assert.ok(families.size >= 3, `${tier}: ${[...families].join(', ')}`);
    }
    for (const s of CATALOG.filter((e) => e.maker === 'meta')) assert.equal(s.family, 'bedrock');
    assert.ok(CATALOG.some((s) => s.maker === 'meta'));
  });
});

describe('domain: engine cost and tokens', () => {
  it('prices tokens in whole micro-dollars, rounding up, without float drift', () => {
    assert.equal(engineCostMicros(10, 0, { inputUsdPerMtok: 0.7, outputUsdPerMtok: 0 }), 7);
    assert.equal(engineCostMicros(1000, 500, { inputUsdPerMtok: 3, outputUsdPerMtok: 15 }), 10_500);
    assert.equal(engineCostMicros(1, 0, { inputUsdPerMtok: 0.1, outputUsdPerMtok: 0 }), 1);
    assert.equal(engineCostMicros(0, 0, { inputUsdPerMtok: 3, outputUsdPerMtok: 15 }), 0);
    assert.equal(engineCostMicros(1_000_000, 1_000_000, { inputUsdPerMtok: 15, outputUsdPerMtok: 75 }), 90_000_000);
  });

  it('counts tokens with the o200k tokenizer, offline, including special-token text', () => {
    assert.equal(countTokens(''), 0);
    assert.equal(countTokens('hello world'), 2);
    assert.ok(countTokens('<|endoftext|>') > 1, 'special tokens in user text are plain text');
    const messages = [
      { role: 'system' as const, content: 'Be brief.' },
      { role: 'user' as const, content: 'hello world' },
    ];
    assert.equal(countMessagesTokens(messages), 3 + 4 + countTokens('Be brief.') + 4 + 2);
  });

  it('counts a prompt as the provider received it: each whole message encoded, segments only past a long run', () => {
    // Where punctuation meets a newline the encoding merges what segment-wise counting splits (14 tokens, not 17).
    const text = 'Answer A:\nThe sky is blue.\n\nAnswer B:\nRayleigh.';
    assert.equal(encode(text).length, 14);
    assert.equal(countMessagesTokensAsSent([{ role: 'user', content: text }]), 3 + 4 + 14);
    assert.ok(countTokens(text) > 14, 'the quote counts more here');
    // A run of 200 letters is counted in segments, as quotes count it, so it cannot take quadratic time.
    const run = 'a'.repeat(5_000);
    assert.equal(countMessagesTokensAsSent([{ role: 'user', content: run }]), 3 + 4 + countTokens(run));
  });
});
