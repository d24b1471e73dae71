import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ActivityFailure, ApplicationFailure, WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { TASK_QUEUES } from '../../../workflows/task-queues';
import { until } from '../../harness/faults';
import { stack } from '../../harness/stack';
import { testWorker } from '../../harness/worker';
import { hedgedSeatWorkflow } from '../../fixtures/hedge-workflow';
import {
  OPENAI_TEST_KEY,
  openAiError,
  openAiReply,
  startOpenAiLoopback,
  type Loopback,
  type RecordedRequest,
  type Reply,
} from '../../fixtures/providers';
import { startProductWorkers } from './helpers';

/** How long a hung first request waits before answering: far longer than the test, so only a cancellation ends it. */
const HANG_MS = 60_000;
/**
 * Past the first heartbeats (one at once, the next held back by the throttle): under the SDK's default throttle (8 s
 * for ENGINE_CALL's 10 s heartbeat timeout) the loser would learn of its cancellation 5–8 s late.
 */
const HEDGE_AFTER_MS = 13_000;
/** A slow first request in the hedging-off cases: past the hedge's 1 s, well inside the test. */
const SLOW_MS = 3_000;

function model(req: RecordedRequest): string {
  return (req.body as { model: string }).model;
}

/**
 * Two engines of a self-hosted server's kind, declared in QUORUM_ENGINES_FILE on the same loopback: `local/queued`
 * may not be hedged, `local/hedgeable` may (the default, as every built-in engine).
 */
function enginesFile(baseUrl: string): string {
  const engine = (id: string, name: string, hedging?: boolean): Record<string, unknown> => ({
    id,
    protocol: 'openai',
    base_url: baseUrl,
    api_key_env: 'HEDGING_TEST_KEY',
    model: name,
    tier: 'plus',
    input_usd_per_mtok: 0,
    output_usd_per_mtok: 0,
    context_tokens: 8_192,
    max_output_tokens: 1_024,
    backup: 'openai/gpt-4.1-mini',
    ...(hedging === undefined ? {} : { hedging }),
  });
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-hedging-')), 'engines.json');
  const engines = [
    engine('local/queued', 'queued', false),
    engine('local/broken', 'broken', false),
    engine('local/hedgeable', 'hedgeable'),
  ];
  fs.writeFileSync(file, JSON.stringify({ engines }));
  return file;
}

/**
 * Hedged calls (issue 27 item 7): when a slow call's duplicate answers first, the first request is cancelled at the
 * HTTP level, so a single-slot self-hosted server stops generating what nobody will read; and an engine configured
 * with `hedging: false` is never sent a duplicate at all.
 */
describe('hedged engine calls: the loser cancelled on the wire, and no duplicate where hedging is off', function () {
  this.timeout(60_000);
  let openai: Loopback;
  let workers: { stop(): Promise<void> };
  let file: string;
  let fixture: { taskQueue: string; stop(): Promise<void> };

  before(async () => {
    // Per model, the first request is slow (gpt-4.1's hangs; `broken` then fails for good); every later one answers at once.
    const served = new Map<string, number>();
    openai = await startOpenAiLoopback((req): Reply => {
      const m = model(req);
      const n = (served.get(m) ?? 0) + 1;
      served.set(m, n);
      if (n > 1) return openAiReply({ text: 'duplicate' });
      if (m === 'broken') return { ...openAiError(404, 'The model `broken` does not exist.'), delayMs: SLOW_MS };
      return { ...openAiReply({ text: 'first' }), delayMs: m === 'gpt-4.1' ? HANG_MS : SLOW_MS };
    });
    file = enginesFile(openai.baseUrl);
    // The seat activity runs on the product's own workers; only the fixture workflow runs on a test worker.
    workers = await startProductWorkers({
      QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY,
      QUORUM_OPENAI_BASE_URL: openai.baseUrl,
      QUORUM_ENGINES_FILE: file,
      HEDGING_TEST_KEY: OPENAI_TEST_KEY,
    });
    const { worker, taskQueue } = await testWorker(path.join(__dirname, '..', '..', 'fixtures', 'hedge-workflow.ts'), {});
    const running = worker.run();
    fixture = { taskQueue, stop: () => (worker.shutdown(), running) };
  });
  after(async () => {
    await fixture.stop();
    await workers.stop();
    await openai.close();
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  });

  /** Starts the fixture workflow: one seat call on `engineId`, hedged after `hedgeAfterMs`, open `holdMs` after it. */
  function hedgedCall(engineId: string, hedgeAfterMs: number, holdMs: number): Promise<WorkflowHandle<typeof hedgedSeatWorkflow>> {
    return stack().env.client.workflow.start(hedgedSeatWorkflow, {
      taskQueue: fixture.taskQueue,
      workflowId: `hedge-test/${randomUUID()}`,
      args: [{ engineId, activityQueue: TASK_QUEUES.deliberation, hedgeAfterMs, holdMs }],
    });
  }

  const ofModel = (name: string): RecordedRequest[] => openai.requests.filter((r) => model(r) === name);

  it('the duplicate wins; the provider sees the first request aborted within seconds, while the workflow runs on', async () => {
    const handle = await hedgedCall('openai/gpt-4.1', HEDGE_AFTER_MS, 30_000);
    try {
      await until(() => ofModel('gpt-4.1').length >= 2, 30_000, 'the hedge sent a duplicate');
      const [first, duplicate] = ofModel('gpt-4.1');
      await until(() => first.abortedAt !== undefined, 15_000, 'the first request was aborted');
      assert.ok(first.abortedAt);
      const after = first.abortedAt - duplicate.receivedAt;
      // About 1 s now (the next heartbeat); 5 s under the SDK's default throttle.
      assert.ok(after < 4_000, `aborted ${after} ms after the duplicate answered`);
      assert.equal(duplicate.abortedAt, undefined, 'the winner was answered, not aborted');
      assert.equal((await handle.describe()).status.name, 'RUNNING', 'cancelled by the hedge, not by the workflow ending');
    } finally {
      await handle.terminate('test over');
    }
  });

  it('hedging on (the default): a slow first request gets a duplicate, which answers first', async () => {
    const text = await (await hedgedCall('local/hedgeable', 1_000, 0)).result();
    assert.equal(text, 'duplicate');
    assert.equal(ofModel('hedgeable').length, 2);
  });

  it('hedging off: no duplicate reaches the server; the slow first request answers', async () => {
    const text = await (await hedgedCall('local/queued', 1_000, 0)).result();
    assert.equal(text, 'first');
    assert.equal(ofModel('queued').length, 1, 'one request, no duplicate queued behind it');
  });

  it('hedging off: when the first request fails for good, its failure decides at once (the backup is not kept waiting)', async () => {
    const started = Date.now();
    const handle = await hedgedCall('local/broken', 1_000, 0);
    await assert.rejects(handle.result(), (e: unknown) => {
      assert.ok(e instanceof WorkflowFailedError && e.cause instanceof ActivityFailure && e.cause.cause instanceof ApplicationFailure);
      assert.equal(e.cause.cause.type, 'EnginePermanent', "the first request's own failure, not the unsent duplicate's");
      return true;
    });
    assert.ok(Date.now() - started < SLOW_MS + 5_000, `decided after ${Date.now() - started} ms`);
    assert.equal(ofModel('broken').length, 1);
  });
});
