import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { TASK_QUEUES } from '../../../workflows/task-queues';
import { until } from '../../harness/faults';
import { stack } from '../../harness/stack';
import { testWorker } from '../../harness/worker';
import { hedgedSeatWorkflow } from '../../fixtures/hedge-workflow';
import { OPENAI_TEST_KEY, openAiReply, startOpenAiLoopback, type Loopback } from '../../fixtures/providers';
import { startProductWorkers } from './helpers';

/** How long the first request waits before answering: far longer than the test, so only a cancellation ends it. */
const HANG_MS = 60_000;
/**
 * Past the first heartbeats (one at once, the next held back by the throttle): under the SDK's default throttle (8 s
 * for ENGINE_CALL's 10 s heartbeat timeout) the loser would learn of its cancellation 5–8 s late.
 */
const HEDGE_AFTER_MS = 13_000;

/**
 * Hedged calls (issue 27 item 7): when a slow call's duplicate answers first, the first request is cancelled at the
 * HTTP level, so a single-slot self-hosted server stops generating what nobody will read.
 */
describe('hedged engine calls: the loser is cancelled on the wire', function () {
  this.timeout(60_000);
  let openai: Loopback;
  let workers: { stop(): Promise<void> };

  before(async () => {
    // The first request hangs; every later one answers at once.
    openai = await startOpenAiLoopback((_req, i) =>
      i === 0 ? { ...openAiReply({ text: 'late' }), delayMs: HANG_MS } : openAiReply({ text: 'duplicate' }),
    );
    // The seat activity runs on the product's own workers; only the fixture workflow runs on a test worker.
    workers = await startProductWorkers({ QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY, QUORUM_OPENAI_BASE_URL: openai.baseUrl });
  });
  after(async () => {
    await workers.stop();
    await openai.close();
  });

  it('the duplicate wins; the provider sees the first request aborted within seconds, while the workflow runs on', async () => {
    const { worker, taskQueue } = await testWorker(path.join(__dirname, '..', '..', 'fixtures', 'hedge-workflow.ts'), {});
    await worker.runUntil(async () => {
      const handle = await stack().env.client.workflow.start(hedgedSeatWorkflow, {
        taskQueue,
        workflowId: `hedge-test/${randomUUID()}`,
        args: [{ engineId: 'openai/gpt-4.1', activityQueue: TASK_QUEUES.deliberation, hedgeAfterMs: HEDGE_AFTER_MS, holdMs: 30_000 }],
      });
      try {
        await until(() => openai.requests.length >= 2, 30_000);
        const [first, duplicate] = openai.requests;
        assert.ok(duplicate, 'the hedge sent a duplicate');
        await until(() => first.abortedAt !== undefined, 15_000);
        assert.ok(first.abortedAt, 'the first request was aborted');
        const after = first.abortedAt - duplicate.receivedAt;
        assert.ok(after < 3_000, `aborted ${after} ms after the duplicate answered`);
        assert.equal(duplicate.abortedAt, undefined, 'the winner was answered, not aborted');
        assert.equal((await handle.describe()).status.name, 'RUNNING', 'cancelled by the hedge, not by the workflow ending');
      } finally {
        await handle.terminate('test over');
      }
    });
  });
});
