import assert from 'node:assert/strict';
import { createEngines, enginesOf, type Difficulty, type EngineRequest } from '../../../engines';
import { engineCostMicros } from '../../../domain/pricing';
import { parseSimLatency, simLatencyMs } from '../../../domain/sim-latency';
import { synthesisPrompt } from '../../../domain/prompts';
import { readRunVerdict, runJudgePrompt } from '../../../domain/run-judging';
import { critiquePrompt } from '../../../domain/prompts';
import { countMessagesTokens, countTokens } from '../../../domain/tokens';
import { captureLogger, engineFailure } from './helpers';
import { settingsOf } from '../../harness/settings';

const engines = createEngines({ ...settingsOf({}), simLatency: 'zero' });

function question(i: number): EngineRequest['messages'] {
  return [{ role: 'user', content: `Question ${i}: what is ${i} plus ${i * 7 + 3}?` }];
}

describe('engines: sim family', () => {
  it('mirrors the tiers with three engines each (plus the two demo novices), priced, and always available', () => {
    for (const tier of ['experience', 'plus', 'pro'] as const) {
      const sims = enginesOf({ tier, family: 'sim' }).filter((s) => !s.mistakeGroup);
      assert.equal(sims.length, 3);
      for (const s of sims) {
        assert.match(s.id, /^sim\//);
        assert.ok(s.inputUsdPerMtok > 0 && s.outputUsdPerMtok > 0);
        assert.ok(s.skill && s.skill.light > s.skill.medium && s.skill.medium > s.skill.hard);
        assert.equal(engines.isAvailable(s.id), true);
      }
    }
  });

  it('is deterministic: the same engine and prompt give the same answer; another engine or prompt differs', async () => {
    const req = {
      engineId: 'sim/alpha-plus',
      messages: [{ role: 'user' as const, content: 'Why do leaves change colour in autumn?' }],
      maxOutputTokens: 1000,
    };
    const a = await engines.call(req);
    const b = await createEngines({ ...settingsOf({}) }).call(req);
    assert.equal(a.text, b.text);
    assert.deepEqual([a.tokensIn, a.tokensOut, a.costMicros], [b.tokensIn, b.tokensOut, b.costMicros]);
    assert.notEqual((await engines.call({ ...req, engineId: 'sim/beta-plus' })).text, a.text);
    assert.notEqual((await engines.call({ ...req, messages: [{ role: 'user', content: 'Why is the sky blue?' }] })).text, a.text);
    assert.match(a.text, /^\[sim\/alpha-plus\] /);
    assert.match(a.text, /leaves|colour|autumn|change/);
  });

  it("synthesises known-answer replies by majority (ties to the judge's pick), so a panel can beat its best seat", async () => {
    const ask = [{ role: 'user' as const, content: 'What is 6 x 7? Answer with the number only.' }];
    const reply = (n: string): string => `Working it out.\n\nFinal answer: ${n}`;
    const synth = async (answers: string[], preferred: string): Promise<string> =>
      (
        await engines.call({
          engineId: 'sim/beta-plus',
          messages: synthesisPrompt(
            ask,
            answers.map((text, i) => ({ label: 'ABC'[i], text })),
            preferred,
            'why',
          ),
          maxOutputTokens: 500,
        })
      ).text;
    assert.match(await synth([reply('42'), reply('41'), reply('42')], 'B'), /Final answer: 42$/);
    assert.match(await synth([reply('40'), reply('41')], 'B'), /Final answer: 41$/);
    // Free-form answers have no final answer to count: the usual simulated prose.
    assert.match(await synth(['Blue light scatters more.', 'Rayleigh scattering.'], 'A'), /^\[sim\/beta-plus\] /);
  });

  it('gives the same wrong answer from engines of one mistake group, and independent ones otherwise', async () => {
    let shared = 0;
    let wrongTogether = 0;
    for (let q = 0; q < 100; q++) {
      const knownAnswer = { answer: String(1000 + q), difficulty: 'hard' as const };
      const ask = (engineId: string) => engines.call({ engineId, messages: question(q), maxOutputTokens: 200, knownAnswer });
      const [a, b] = await Promise.all([ask('sim/novice-a'), ask('sim/novice-b')]);
      const finalOf = (t: string) => /Final answer: (.*)$/.exec(t)?.[1];
      if (finalOf(a.text) !== knownAnswer.answer && finalOf(b.text) !== knownAnswer.answer) {
        wrongTogether++;
        if (finalOf(a.text) === finalOf(b.text)) shared++;
      }
    }
    assert.ok(wrongTogether > 60, `both novices were wrong on ${wrongTogether} of 100 hard questions`);
    assert.equal(shared, wrongTogether, 'novices share every mistake');
  });

  it('recognises a right answer it is shown when revising (checking is easier than finding)', async () => {
    let right = 0;
    for (let q = 0; q < 200; q++) {
      const knownAnswer = { answer: String(q), difficulty: 'hard' as const };
      const r = await engines.call({
        engineId: 'sim/gamma-plus',
        messages: critiquePrompt(question(q), [], `Final answer: ${q + 1}`, [{ label: 'B', text: `Final answer: ${q}` }]),
        maxOutputTokens: 200,
        knownAnswer,
      });
      if (r.text.endsWith(`Final answer: ${q}`)) right++;
    }
    // gamma-plus finds a hard answer alone 47% of the time; shown it, 0.47 + 0.53 × 0.7 ≈ 84%.
    assert.ok(right > 150 && right < 185, `revised to the right answer ${right} of 200 times`);
  });

  it('judges a run against the reference: prefers the matching answer most of the time, never names an unshown label', async () => {
    let wins = 0;
    for (let q = 0; q < 200; q++) {
      const right = `Final answer: ${q}`;
      const wrong = `Final answer: ${q + 1}`;
      const modeAt = q % 2;
      const shown = modeAt === 0 ? [right, wrong] : [wrong, right];
      const r = await engines.call({
        engineId: 'sim/gamma-plus',
        messages: runJudgePrompt('pairwise', `Question ${q}`, String(q), shown),
        maxOutputTokens: 200,
      });
      const verdict = readRunVerdict(r.text, 2, modeAt);
      assert.ok(verdict, r.text);
      if (verdict === 'win') wins++;
    }
    assert.ok(wins > 150 && wins < 195, `the correct answer won ${wins} of 200`);
  });

  it('counts tokens honestly and prices them from the catalog', async () => {
    const messages = [{ role: 'user' as const, content: 'Summarise the causes of the French Revolution.' }];
    const r = await engines.call({ engineId: 'sim/gamma-pro', messages, maxOutputTokens: 1000 });
    assert.equal(r.finish, 'stop');
    assert.equal(r.tokensIn, countMessagesTokens(messages));
    assert.equal(r.tokensOut, countTokens(r.text));
    assert.equal(r.costMicros, engineCostMicros(r.tokensIn, r.tokensOut, engines.spec('sim/gamma-pro')));
    assert.ok(r.costMicros > 0);
    assert.equal(r.source, 'service');
    assert.equal(r.engineId, 'sim/gamma-pro');
  });

  it('truncates to maxOutputTokens and flags length', async () => {
    const messages = [
      { role: 'user' as const, content: 'Explain photosynthesis in detail, covering light reactions and the Calvin cycle.' },
    ];
    const whole = await engines.call({ engineId: 'sim/alpha-pro', messages, maxOutputTokens: 1000 });
    assert.ok(whole.tokensOut > 10);
    const cut = await engines.call({ engineId: 'sim/alpha-pro', messages, maxOutputTokens: 8 });
    assert.equal(cut.finish, 'length');
    assert.equal(cut.tokensOut, 8);
    assert.ok(whole.text.startsWith(cut.text));
    assert.ok(cut.text.length < whole.text.length);
  });

  it('answers known-answer questions correctly at the configured rate (2,000 prompts, ±4 standard errors)', async () => {
    const n = 2000;
    for (const [engineId, difficulty] of [
      ['sim/beta-plus', 'medium'],
      ['sim/alpha-pro', 'hard'],
      ['sim/gamma-experience', 'light'],
    ] as const) {
      const skill = engines.spec(engineId).skill?.[difficulty as Difficulty] ?? NaN;
      let correct = 0;
      for (let i = 0; i < n; i += 1) {
        const answer = String(i + i * 7 + 3);
        const r = await engines.call({ engineId, messages: question(i), maxOutputTokens: 200, knownAnswer: { answer, difficulty } });
        const given = /Final answer: (.+)$/.exec(r.text)?.[1];
        assert.ok(given !== undefined, `no final answer line in ${r.text}`);
        if (given === answer) correct += 1;
        else assert.match(given, /^\d+$/, 'a wrong answer keeps the shape of the right one');
      }
      const rate = correct / n;
      const tolerance = 4 * Math.sqrt((skill * (1 - skill)) / n);
      assert.ok(Math.abs(rate - skill) <= tolerance, `${engineId} ${difficulty}: rate ${rate} vs skill ${skill} ± ${tolerance.toFixed(4)}`);
    }
  });

  it('gives wrong answers of the same shape (dates, decimals, words)', async () => {
    for (const answer of ['2024-02-29', '3.75', 'racecar level', 'banana']) {
      let sawWrong = false;
      for (let i = 0; i < 40 && !sawWrong; i += 1) {
        const r = await engines.call({
          engineId: 'sim/gamma-experience',
          messages: question(i),
          maxOutputTokens: 200,
          knownAnswer: { answer, difficulty: 'hard' },
        });
        const given = /Final answer: (.+)$/.exec(r.text)?.[1] ?? '';
        if (given !== answer) {
          sawWrong = true;
          assert.notEqual(given.toLowerCase(), answer.toLowerCase());
          if (answer === '2024-02-29') assert.match(given, /^\d{4}-\d{2}-\d{2}$/);
          if (answer === '3.75') assert.match(given, /^-?\d+\.\d{2}$/);
        }
      }
      assert.ok(sawWrong, `no wrong answer for ${answer}`);
    }
  });

  describe('latency', () => {
    it('parses zero, fixed and spec models and refuses anything else', () => {
      assert.deepEqual(parseSimLatency('zero'), { kind: 'zero' });
      assert.deepEqual(parseSimLatency('fixed:250'), { kind: 'fixed', ms: 250 });
      assert.deepEqual(parseSimLatency('spec'), { kind: 'spec', speedup: 1 });
      assert.deepEqual(parseSimLatency('spec:100'), { kind: 'spec', speedup: 100 });
      for (const bad of ['', 'fixed', 'fixed:-1', 'spec:0', 'spec:abc', 'slow', 'zero:1']) assert.throws(() => parseSimLatency(bad));
      assert.throws(() => createEngines({ ...settingsOf({ QUORUM_SIM_LATENCY: 'fast' }) }));
    });

    it('the spec model reproduces the published p50 / p90 / p99 within 5%', () => {
      const model = parseSimLatency('spec');
      const draws: number[] = [];
      // A regular grid over (0,1)² is the exact distribution, without sampling noise.
      const k = 400;
      for (let i = 0; i < k; i += 1) for (let j = 0; j < k; j += 1) draws.push(simLatencyMs(model, (i + 0.5) / k, (j + 0.5) / k));
      draws.sort((a, b) => a - b);
      const q = (p: number): number => draws[Math.floor(p * draws.length)] ?? NaN;
      for (const [p, target] of [
        [0.5, 28_500],
        [0.9, 88_200],
        [0.99, 229_300],
      ] as const) {
        assert.ok(Math.abs(q(p) / target - 1) < 0.05, `p${p * 100}: ${q(p).toFixed(0)} ms vs ${target} ms`);
      }
      assert.equal(simLatencyMs(parseSimLatency('spec:1000'), 0.3, 0.7), simLatencyMs(model, 0.3, 0.7) / 1000);
    });

    it('fixed latency delays the answer, and a deadline shorter than it is a retryable timeout', async () => {
      const slow = createEngines({ ...settingsOf({}), simLatency: 'fixed:120', logger: captureLogger().logger });
      const req = { engineId: 'sim/alpha-experience', messages: question(1), maxOutputTokens: 100 };
      const started = Date.now();
      const r = await slow.call(req);
      assert.ok(Date.now() - started >= 110);
      assert.ok(r.latencyMs >= 110);
      const err = await engineFailure(slow.call({ ...req, timeoutMs: 30 }));
      assert.deepEqual([err.kind, err.retryable], ['timeout', true]);
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 20);
      const cancelled = await engineFailure(slow.call({ ...req, signal: controller.signal }));
      assert.deepEqual([cancelled.kind, cancelled.retryable], ['aborted', false]);
    });

    it("QUORUM_ENGINE_TIMEOUT_MS sets every call's deadline, within 1 ms to 180 s", async () => {
      const logger = captureLogger().logger;
      const quick = createEngines({ ...settingsOf({ QUORUM_ENGINE_TIMEOUT_MS: '30' }), simLatency: 'fixed:120', logger });
      const err = await engineFailure(quick.call({ engineId: 'sim/alpha-experience', messages: question(1), maxOutputTokens: 100 }));
      assert.deepEqual([err.kind, err.retryable], ['timeout', true]);
      for (const bad of ['0', '180001', '1.5', 'soon'])
        assert.throws(() => createEngines({ ...settingsOf({ QUORUM_ENGINE_TIMEOUT_MS: bad }), logger }), /QUORUM_ENGINE_TIMEOUT_MS/);
    });

    it('QUORUM_SIM_LATENCY configures the family from the environment', async () => {
      const started = Date.now();
      await createEngines({ ...settingsOf({ QUORUM_SIM_LATENCY: 'fixed:80' }) }).call({
        engineId: 'sim/beta-pro',
        messages: question(2),
        maxOutputTokens: 50,
      });
      assert.ok(Date.now() - started >= 70);
    });
  });
});
