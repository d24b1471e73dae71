import type { ChildProcess } from 'node:child_process';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { getBalance } from '../../../db/repositories/ledger';
import { JUDGE_TAG, SYNTHESIS_TAG } from '../../../domain/prompts';
import {
  OPENAI_TEST_KEY,
  openAiReply,
  startOpenAiLoopback,
  type Loopback,
  type RecordedRequest,
  type Reply,
} from '../../fixtures/providers';
import { exitOf, until } from '../../harness/faults';
import { stack } from '../../harness/stack';
import { stackProcessEnv, startApiProcess, startWorkerProcess } from '../../harness/worker';
import { newOrg } from '../api/helpers';
import { assertEachBilledOnce, customMode } from '../deliberation/helpers';

/**
 * Issue 40 item 1: a background response outlives the API that took it and the worker that was running it. Both are
 * SIGKILLed while its seats are out; a new worker finishes the deliberation, a new API answers its poll, and it is
 * answered once and billed once.
 */
const SEAT_DELAY_MS = 4_000;
/** Seats are slow until the kill, so it lands while they are in flight; the retries answer at once. */
let slowSeats = true;

const isSeatCall = (req: RecordedRequest): boolean => !req.bodyText.includes(JUDGE_TAG) && !req.bodyText.includes(SYNTHESIS_TAG);

function script(req: RecordedRequest): Reply {
  if (req.bodyText.includes(JUDGE_TAG)) {
    const labels = [...new Set([...req.bodyText.matchAll(/Answer ([A-C]):/g)].map((m) => m[1]))];
    const verdict = {
      scores: Object.fromEntries(labels.map((l) => [l, 8])),
      best: labels[0],
      why: 'All agree.',
      divergence: 0.1,
      converged: true,
    };
    return openAiReply({ text: JSON.stringify(verdict) });
  }
  return { ...openAiReply({ text: 'Water boils at 100 °C at sea level.' }), delayMs: isSeatCall(req) && slowSeats ? SEAT_DELAY_MS : 0 };
}

describe('faults: a background response outlives a killed API and a killed worker', function () {
  this.timeout(180_000);
  let openai: Loopback;
  let dataDir: string;
  const children: ChildProcess[] = [];

  before(async () => {
    openai = await startOpenAiLoopback(script);
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-response-restart-'));
  });
  after(async () => {
    for (const c of children.filter((p) => p.exitCode === null && p.signalCode === null)) {
      const exit = exitOf(c);
      c.kill('SIGKILL');
      await exit;
    }
    await openai.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('completes on the new worker, is polled through the new API, answered once and billed once', async () => {
    const engines = { QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY, QUORUM_OPENAI_BASE_URL: openai.baseUrl };
    const org = await newOrg();
    const mode = await customMode(org.orgId, 'quorum-panel', {
      tiers: { experience: { seats: ['openai/gpt-4.1-mini'] }, plus: { seats: ['openai/gpt-4.1', 'openai/gpt-4.1-mini', 'openai/gpt-5'] } },
      staff: { judge: { engine: 'openai/gpt-4.1' }, synthesis: { engine: 'openai/gpt-4.1' } },
      rounds: 1,
      critique: 'never',
      express: 'never',
    });
    const before = await getBalance(stack().db, org.orgId);
    const worker = await startWorkerProcess(stackProcessEnv(dataDir, engines));
    const api = await startApiProcess(stackProcessEnv(dataDir, { QUORUM_FORM: 'B' }));
    children.push(worker, api.child);
    const sdk = (url: string): OpenAI => new OpenAI({ baseURL: `${url}/v1`, apiKey: org.ownerKey, maxRetries: 0 });

    const created = await sdk(api.url).responses.create({
      model: mode.ticker,
      input: 'At what temperature does water boil at sea level?',
      background: true,
    });
    assert.equal(created.status, 'queued');
    await until(() => openai.requests.filter(isSeatCall).length >= 3, 30_000, 'three seat calls in flight');
    slowSeats = false;
    const [workerExit, apiExit] = [exitOf(worker), exitOf(api.child)];
    worker.kill('SIGKILL');
    api.child.kill('SIGKILL');
    await Promise.all([workerExit, apiExit]);

    const [worker2, api2] = await Promise.all([
      startWorkerProcess(stackProcessEnv(dataDir, engines)),
      startApiProcess(stackProcessEnv(dataDir, { QUORUM_FORM: 'B' })),
    ]);
    children.push(worker2, api2.child);
    let done = await sdk(api2.url).responses.retrieve(created.id);
    for (const deadline = Date.now() + 120_000; (done.status === 'queued' || done.status === 'in_progress') && Date.now() < deadline;) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      done = await sdk(api2.url).responses.retrieve(created.id);
    }
    assert.equal(done.status, 'completed');
    assert.equal(done.output_text, 'Water boils at 100 °C at sea level.');
    const svc = (done as unknown as { svc: { request_id: string; billed_usd: number; seats_answered: number } }).svc;
    assert.equal(svc.seats_answered, 3);

    // Each seat: the call cut off by the kill, then its retry on the new worker, within the 3 tries the policy allows.
    const perSeat = new Map<string, number>();
    for (const r of openai.requests.filter(isSeatCall)) {
      const model = (r.body as { model: string }).model;
      perSeat.set(model, (perSeat.get(model) ?? 0) + 1);
    }
    assert.equal(perSeat.size, 3);
    for (const [model, calls] of perSeat) assert.ok(calls >= 2 && calls <= 3, `${model} called ${calls} times`);
    await assertEachBilledOnce(org.orgId, [svc.request_id]);
    const after = await getBalance(stack().db, org.orgId);
    assert.equal(before.balanceMicros - after.balanceMicros, BigInt(Math.round(svc.billed_usd * 1_000_000)));
  });
});
