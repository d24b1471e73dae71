import assert from 'node:assert/strict';
import { createEngines, type Difficulty } from '../../../engines';
import { settingsOf } from '../../harness/settings';

/** QUORUM_SIM_SKILL (bench/calibration.ts): every sim engine equally good and wrong alike; unset, nothing changes. */
const finalOf = (t: string): string | undefined => /Final answer: (.*)$/.exec(t)?.[1];

async function answers(env: NodeJS.ProcessEnv, engineId: string, difficulty: Difficulty, n: number): Promise<(string | undefined)[]> {
  const engines = createEngines({ ...settingsOf(env), simLatency: 'zero' });
  const out: (string | undefined)[] = [];
  for (let q = 0; q < n; q++) {
    const r = await engines.call({
      engineId,
      messages: [{ role: 'user', content: `Calibration question ${q}: what is ${q} times 3?` }],
      maxOutputTokens: 200,
      knownAnswer: { answer: String(3 * q), difficulty },
    });
    out.push(finalOf(r.text));
  }
  return out;
}

const rightShare = (finals: (string | undefined)[]): number => finals.filter((f, q) => f === String(3 * q)).length / finals.length;

describe('engines: QUORUM_SIM_SKILL', () => {
  it('gives every engine the same skill at every difficulty, and one shared wrong answer per question', async () => {
    const env = { QUORUM_SIM_SKILL: '0.5' };
    const n = 400;
    const strongLight = await answers(env, 'sim/beta-pro', 'light', n);
    const weakHard = await answers(env, 'sim/novice-a', 'hard', n);
    // Catalog skills 0.97 and 0.1; both now a fair coin (400 draws: ±0.075 is beyond 3 standard errors).
    for (const finals of [strongLight, weakHard]) assert.ok(Math.abs(rightShare(finals) - 0.5) < 0.075, String(rightShare(finals)));
    // Independent draws per engine, and where both are wrong, wrong alike.
    let bothWrong = 0;
    let differ = 0;
    for (let q = 0; q < n; q++) {
      const right = String(3 * q);
      if (strongLight[q] !== right && weakHard[q] !== right) {
        bothWrong++;
        assert.equal(strongLight[q], weakHard[q]);
      }
      if ((strongLight[q] === right) !== (weakHard[q] === right)) differ++;
    }
    assert.ok(bothWrong > 50 && differ > 120, `${bothWrong} ${differ}`);
  });

  it('leaves the catalog skills alone when unset, and refuses a value that is not a probability', async () => {
    assert.ok(rightShare(await answers({}, 'sim/novice-a', 'hard', 200)) < 0.25);
    assert.ok(rightShare(await answers({ QUORUM_SIM_SKILL: '' }, 'sim/beta-pro', 'light', 200)) > 0.9);
    for (const bad of ['1.5', '-0.1', 'half'])
      assert.throws(() => createEngines({ ...settingsOf({ QUORUM_SIM_SKILL: bad }) }), /QUORUM_SIM_SKILL/);
  });
});
