import assert from 'node:assert/strict';
import { getBalance } from '../../../db/repositories/ledger';
import type { Outcome } from '../../../domain/outcome';
import { assertEachBilledOnce, customMode, deliberate, newOrg, startProductWorkers } from '../deliberation/helpers';
import { OPENAI_TEST_KEY, openAiError, openAiReply, startOpenAiLoopback, type Loopback, type Reply } from '../../fixtures/providers';
import { stack } from '../../harness/stack';

/** The seats on the loopback provider, each with a `sim` backup; judge and synthesis on `sim`, so every provider request is a seat's. */
const SEATS = ['openai/gpt-4.1', 'openai/gpt-4.1-mini'];
const BACKUPS = ['sim/alpha-plus', 'sim/beta-plus'];
/** ENGINE_CALL's retry policy (workflows/engine-call-policy.ts): tries per engine before the seat moves to its backup. */
const TRIES = 3;
const TIMEOUT_MS = 300;

type Behaviour = 'down' | 'slow' | 'up';

/**
 * Issue 16: a provider down (every request 503), then slow (past the engine deadline), then back. Extends
 * test/stack/deliberation/providers.test.ts (a permanent failure moving a seat to its backup) to transient ones.
 */
describe('faults: a provider down, then slow, then back', function () {
  this.timeout(60_000);
  let behaviour: Behaviour = 'up';
  let openai: Loopback;
  let workers: { stop(): Promise<void> };

  const script = (): Reply => {
    if (behaviour === 'down') return openAiError(503, 'The server is overloaded or not ready yet.');
    const answer = openAiReply({ text: 'Rayleigh scattering: shorter wavelengths scatter more.', completionTokens: 9 });
    return behaviour === 'slow' ? { ...answer, delayMs: TIMEOUT_MS * 5 } : answer;
  };

  before(async () => {
    openai = await startOpenAiLoopback(script);
    workers = await startProductWorkers({
      QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY,
      QUORUM_OPENAI_BASE_URL: openai.baseUrl,
      QUORUM_ENGINE_TIMEOUT_MS: String(TIMEOUT_MS),
    });
  });
  after(async () => {
    await workers?.stop();
    await openai?.close();
  });

  /** One panel call with the provider behaving so; its outcome and the provider requests it made, per model. */
  async function callWhile(b: Behaviour): Promise<{ outcome: Outcome; requests: Map<string, number> }> {
    behaviour = b;
    const org = await newOrg();
    const mode = await customMode(org.orgId, 'quorum-panel', {
      tiers: { experience: { seats: ['sim/alpha-experience'] }, plus: { seats: SEATS, backups: BACKUPS } },
      staff: { judge: { engine: 'sim/gamma-plus' }, synthesis: { engine: 'sim/alpha-plus' } },
      rounds: 1,
      critique: 'never',
      express: 'never',
    });
    const before = await getBalance(stack().db, org.orgId);
    const seen = openai.requests.length;
    const { outcome } = await deliberate({ org, mode, content: 'Why is the sky blue?' });
    const requests = new Map<string, number>();
    for (const r of openai.requests.slice(seen)) {
      const model = (r.body as { model: string }).model;
      requests.set(model, (requests.get(model) ?? 0) + 1);
    }
    assert.deepEqual(openai.rejected, [], 'every provider request well formed');
    assert.equal(outcome.status, 'succeeded');
    assert.equal(outcome.seatsAnswered, SEATS.length);
    await assertEachBilledOnce(org.orgId, [outcome.requestId]);
    assert.equal(before.balanceMicros - (await getBalance(stack().db, org.orgId)).balanceMicros, BigInt(outcome.money.billedMicros));
    return { outcome, requests };
  }

  /** Each seat tried TRIES times on the provider, then answered by its backup; the receipt, stored and returned, says so. */
  async function assertFellBack(outcome: Outcome, requests: Map<string, number>, reason: RegExp): Promise<void> {
    assert.deepEqual(Object.fromEntries(requests), { 'gpt-4.1': TRIES, 'gpt-4.1-mini': TRIES });
    assert.deepEqual(
      outcome.substitutions.map((s) => [s.role, s.original, s.used]),
      [
        ['seat1', SEATS[0], BACKUPS[0]],
        ['seat2', SEATS[1], BACKUPS[1]],
      ],
    );
    for (const s of outcome.substitutions) assert.match(s.reason, reason);
    assert.deepEqual([...outcome.engines].sort(), [...BACKUPS].sort(), 'only the engines that answered are named');
    const stored = (await stack()
      .db('receipt_seats')
      .where({ request_id: outcome.requestId })
      .orderBy('role')
      .select('role', 'model_used', 'original_model', 'fallback_used')) as Record<string, unknown>[];
    assert.deepEqual(stored, [
      { role: 'seat1', model_used: BACKUPS[0], original_model: SEATS[0], fallback_used: true },
      { role: 'seat2', model_used: BACKUPS[1], original_model: SEATS[1], fallback_used: true },
    ]);
  }

  it('down (503 to every request): each seat tried 3 times, then its backup answers, named on the receipt', async () => {
    const { outcome, requests } = await callWhile('down');
    await assertFellBack(outcome, requests, /503|overloaded/);
  });

  it('slow (past the engine deadline): each seat tried 3 times, then its backup answers, named on the receipt', async () => {
    const { outcome, requests } = await callWhile('slow');
    await assertFellBack(outcome, requests, /timed out/);
  });

  it('back: each seat answered by the provider at the first try, no fallback', async () => {
    const { outcome, requests } = await callWhile('up');
    assert.deepEqual(Object.fromEntries(requests), { 'gpt-4.1': 1, 'gpt-4.1-mini': 1 });
    assert.deepEqual(outcome.substitutions, []);
    assert.deepEqual([...outcome.engines].sort(), [...SEATS].sort());
    assert.ok(outcome.seatPasses.every((p) => !p.fallbackUsed && p.originalModel === null));
  });
});
