import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { getBalance } from '../../../db/repositories/ledger';
import { leasesInFlight } from '../../../db/repositories/limits';
import { createOrganisation } from '../../../db/repositories/organisations';
import { expireTrialCredit } from '../../../db/repositories/trial-credit';
import { startApi, newKey, type Api } from '../api/helpers';
import { assertEachBilledOnce, startProductWorkers } from '../deliberation/helpers';
import { pause, postCompletion, type CompletionReply } from '../../harness/faults';
import { stack } from '../../harness/stack';

const CALLS = 200;
const COVERED = 20;
const CONCURRENCY = 30;
/**
 * The key's per-call ceiling: below what any panel call costs, so every call is capped and nets exactly this (Form B
 * runs in full and credits back the excess). With a balance of COVERED ceilings, exactly COVERED calls can ever hold
 * one, however they interleave: a settled call frees nothing for another.
 */
const CEILING_MICROS = 1_000n;

describe('faults: 200 concurrent calls from one organisation whose balance covers 20', function () {
  this.timeout(90_000);
  let api: Api;
  let workers: { stop(): Promise<void> };

  before(async () => {
    // Engines answer in 500 ms, so the first calls still hold their slots while the rest arrive.
    [api, workers] = await Promise.all([startApi('B'), startProductWorkers({ QUORUM_SIM_LATENCY: 'fixed:500' })]);
  });
  after(async () => {
    await api?.close();
    await workers?.stop();
  });

  it('the concurrency limit and the balance hold exactly: 20 answers, the rest 402 or 429, never below zero, billed once each', async () => {
    const { db } = stack();
    const org = await createOrganisation(db, {
      name: `Overload ${randomUUID().slice(0, 8)}`,
      creditMicros: BigInt(COVERED) * CEILING_MICROS,
    });
    // Its $5 trial expired (as its timer would, 30 days on), the balance is the prepaid credit alone: 20 ceilings.
    await expireTrialCredit(db, org.orgId);
    assert.equal((await getBalance(db, org.orgId)).balanceMicros, BigInt(COVERED) * CEILING_MICROS);
    // A rate limit above the burst, so only the organisation's concurrency and its balance refuse.
    const key = await newKey(org.orgId, { limits: { concurrency: CONCURRENCY, requestsPerMinute: 1_000, maxCostMicros: CEILING_MICROS } });

    // Watched while the burst runs: slots in use, and the balance and hold as Postgres has them.
    let watching = true;
    const seen = { maxLeases: 0, minAvailable: BigInt(COVERED) * CEILING_MICROS, minBalance: BigInt(COVERED) * CEILING_MICROS };
    const watcher = (async (): Promise<void> => {
      while (watching) {
        const [leases, b] = await Promise.all([leasesInFlight(db, org.orgId), getBalance(db, org.orgId)]);
        seen.maxLeases = Math.max(seen.maxLeases, leases);
        if (b.availableMicros < seen.minAvailable) seen.minAvailable = b.availableMicros;
        if (b.balanceMicros < seen.minBalance) seen.minBalance = b.balanceMicros;
        await pause(20);
      }
    })();
    const replies: CompletionReply[] = await Promise.all(
      Array.from({ length: CALLS }, (_, i) =>
        postCompletion(api.url, key, randomUUID(), { content: `Question ${i}: why is the sky blue?` }),
      ),
    );
    watching = false;
    await watcher;

    const byOutcome = new Map<string, number>();
    for (const r of replies) {
      const outcome = r.status === 200 ? '200' : `${r.status} ${r.body.error?.code ?? JSON.stringify(r.body)}`;
      byOutcome.set(outcome, (byOutcome.get(outcome) ?? 0) + 1);
    }
    const summary = JSON.stringify(Object.fromEntries(byOutcome));
    assert.deepEqual(
      [...byOutcome.keys()].filter((o) => !['200', '402 insufficient_balance', '429 concurrency_limit_exceeded'].includes(o)),
      [],
      summary,
    );
    assert.equal(byOutcome.get('200'), COVERED, summary);
    // Every slot was taken, so more than the balance covers reached the hold and were refused there.
    assert.ok((byOutcome.get('402 insufficient_balance') ?? 0) >= CONCURRENCY - COVERED, summary);
    assert.ok((byOutcome.get('429 concurrency_limit_exceeded') ?? 0) > 0, summary);
    assert.ok(seen.maxLeases <= CONCURRENCY, `${seen.maxLeases} slots in use at once`);
    assert.ok(
      seen.minAvailable >= 0n && seen.minBalance >= 0n,
      JSON.stringify(seen, (_, v: unknown) => String(v)),
    );

    const answered = replies.filter((r) => r.status === 200);
    for (const r of answered) assert.equal(r.body.svc?.billed_usd, Number(CEILING_MICROS) / 1e6, 'each call capped at the ceiling');
    await assertEachBilledOnce(
      org.orgId,
      answered.map((r) => r.body.svc?.request_id ?? ''),
    );
    assert.equal((await getBalance(db, org.orgId)).balanceMicros, 0n, 'the balance spent exactly, not past zero');
    assert.equal(await leasesInFlight(db, org.orgId), 0, 'every slot given back');
  });
});
