import type { ChildProcess } from 'node:child_process';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { JUDGE_TAG } from '../../../domain/prompts';
import { getBalance } from '../../../db/repositories/ledger';
import { until } from '../../harness/faults';
import { stack } from '../../harness/stack';
import { startWorkerProcess, stackProcessEnv } from '../../harness/worker';
import {
  OPENAI_TEST_KEY,
  openAiReply,
  startOpenAiLoopback,
  type Loopback,
  type RecordedRequest,
  type Reply,
} from '../../fixtures/providers';
import { chargeCount, customMode, deliberate, newOrg } from './helpers';

const SEAT_DELAY_MS = 4_000;
/** Seat calls are slow until the first worker is killed, so the kill lands while they are in flight; the retries answer at once. */
let slowSeats = true;

function isSeatCall(req: RecordedRequest): boolean {
  return !req.bodyText.includes(JUDGE_TAG) && !req.bodyText.includes('Write the single best answer');
}

function script(req: RecordedRequest): Reply {
  if (req.bodyText.includes(JUDGE_TAG)) {
    const labels = [...new Set([...req.bodyText.matchAll(/Answer ([A-C]):/g)].map((m) => m[1]))];
    const text = JSON.stringify({
      scores: Object.fromEntries(labels.map((l) => [l, 8])),
      best: labels[0],
      why: 'All agree.',
      divergence: 0.1,
      converged: true,
      contested: null,
      factual_conflict: false,
    });
    return openAiReply({ text });
  }
  return { ...openAiReply({ text: 'Water boils at 100 °C at sea level.' }), delayMs: isSeatCall(req) && slowSeats ? SEAT_DELAY_MS : 0 };
}

describe('deliberation durability: the worker dies mid-seat', function () {
  this.timeout(180_000);
  let openai: Loopback;
  let dataDir: string;
  const children: ChildProcess[] = [];

  before(async () => {
    openai = await startOpenAiLoopback(script);
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-durability-'));
  });
  after(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await openai.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('completes on a new worker, each seat called within its retries, charged exactly once', async () => {
    const env = stackProcessEnv(dataDir, { QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY, QUORUM_OPENAI_BASE_URL: openai.baseUrl });
    const org = await newOrg();
    const mode = await customMode(org.orgId, 'quorum-panel', {
      tiers: { experience: { seats: ['openai/gpt-4.1-mini'] }, plus: { seats: ['openai/gpt-4.1', 'openai/gpt-4.1-mini', 'openai/gpt-5'] } },
      rounds: 1,
      critique: 'never',
      express: 'never',
    });
    const before = await getBalance(stack().db, org.orgId);

    const first = await startWorkerProcess(env);
    children.push(first);
    const running = deliberate({ org, mode, content: 'At what temperature does water boil at sea level?' });
    await until(() => openai.requests.filter(isSeatCall).length >= 3, 30_000, 'three seat calls in flight');
    slowSeats = false;
    first.kill('SIGKILL');
    await new Promise((r) => first.once('exit', r));

    const second = await startWorkerProcess(env);
    children.push(second);
    const { outcome } = await running;
    second.kill('SIGTERM');

    assert.equal(outcome.status, 'succeeded');
    assert.equal(outcome.seatsAnswered, 3);
    const perSeat = new Map<string, number>();
    for (const r of openai.requests.filter(isSeatCall)) {
      const model = (r.body as { model: string }).model;
      perSeat.set(model, (perSeat.get(model) ?? 0) + 1);
    }
    assert.equal(perSeat.size, 3);
    // The call cut off by the kill, then one retry on the new worker: within the 3 tries the policy allows.
    for (const [model, calls] of perSeat) assert.ok(calls >= 2 && calls <= 3, `${model} called ${calls} times`);

    const after = await getBalance(stack().db, org.orgId);
    assert.equal(before.balanceMicros - after.balanceMicros, BigInt(outcome.money.billedMicros));
    assert.equal(after.reservedMicros, 0n);
    assert.equal(await chargeCount(org.orgId), 1);
  });
});
