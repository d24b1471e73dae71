import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import type { Form } from '../../../domain/form';
import { workflowIds } from '../../../domain/workflow-ids';
import { engineCallsOut, until } from '../../harness/faults';
import { stack } from '../../harness/stack';
import { customMode, startProductWorkers } from '../deliberation/helpers';
import { FORMS, newOrg, startApi, type Api } from './helpers';

type WithSvc = OpenAI.Chat.Completions.ChatCompletion & { svc: Record<string, unknown> };

/**
 * Each sim engine call takes this long, and the call below makes three one after another (the seats' pass, the judge,
 * the synthesis): 15 s every time, long enough that a duplicate's retries on the old fixed `Retry-After: 5` (two waits
 * of 5 s) end before the call does.
 */
const ENGINE_MS = 5_000;

/**
 * Issue 28 item 7: a 409 `request_in_progress` carries a `Retry-After` of what the running call has left, so the
 * official `openai` client's own retries (`maxRetries: 2`) of a duplicate sent while a 15 s call runs end with its
 * replay instead of raising 409 (as with the old fixed `Retry-After: 5`: two waits of 5 s end before the call does).
 */
describe('retries that converge: the openai client’s own retries of a running call get its replay', function () {
  this.timeout(300_000);
  let workers: { stop(): Promise<void> };
  const apis = {} as Record<Form, Api>;

  before(async () => {
    workers = await startProductWorkers({ QUORUM_SIM_LATENCY: `fixed:${ENGINE_MS}` });
    for (const form of FORMS) apis[form] = await startApi(form);
  });
  after(async () => {
    for (const form of FORMS) await apis[form].close();
    await workers.stop();
  });

  async function duplicateGetsReplay(form: Form): Promise<void> {
    const org = await newOrg();
    // A mode of its own: its stage times are then this test's calls alone, not the instant sim calls other tests make
    // on the shared system modes. One round, no critique, the synthesis always run: every call the same three steps.
    const mode = await customMode(org.orgId, 'quorum-panel', {
      express: 'never',
      rounds: 1,
      critique: 'never',
      skipSynthesisWhenConverged: false,
    });
    const model = form === 'A' ? mode.id : mode.ticker;
    const baseURL = `${apis[form].url}/v1`;
    const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Compare two approaches to caching and explain the trade-offs, step by step.' },
    ];
    const plain = new OpenAI({ baseURL, apiKey: org.ownerKey, maxRetries: 0, timeout: 120_000 });

    // One call before: the mode's stage times are then observed, not the spec's.
    const warmStart = Date.now();
    await plain.chat.completions.create({ model, messages });
    const callMs = Date.now() - warmStart;
    assert.ok(callMs > 12_000, `Form ${form}: a call takes about 15 s here (took ${callMs} ms)`);

    const seen: { status: number; retryAfter: string | null }[] = [];
    const recording: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      seen.push({ status: res.status, retryAfter: res.headers.get('retry-after') });
      return res;
    };
    const retrying = new OpenAI({ baseURL, apiKey: org.ownerKey, maxRetries: 2, timeout: 120_000, fetch: recording });

    const idem = randomUUID();
    const first = plain.chat.completions.create({ model, messages }, { headers: { 'Idempotency-Key': idem } });
    // The duplicate as soon as the first call's seats run: all of the call still ahead of it.
    const workflowId = workflowIds.deliberation(org.orgId, idem);
    await until(async () => engineCallsOut(stack().env.client, workflowId), 10_000, `Form ${form}: the first call running`);
    const duplicate = (await retrying.chat.completions.create({ model, messages }, { headers: { 'Idempotency-Key': idem } })) as WithSvc;
    const original = (await first) as WithSvc;

    assert.equal(duplicate.svc.replayed, true);
    assert.equal(duplicate.svc.request_id, original.svc.request_id);
    assert.equal(duplicate.choices[0].message.content, original.choices[0].message.content);
    const conflicts = seen.filter((s) => s.status === 409);
    assert.ok(conflicts.length >= 1 && conflicts.length <= 2, `Form ${form}: ${JSON.stringify(seen)}`);
    for (const c of conflicts) {
      const wait = Number(c.retryAfter);
      assert.ok(Number.isInteger(wait) && wait >= 1 && wait <= 60, `Form ${form}: Retry-After ${c.retryAfter}`);
    }
    assert.deepEqual(
      seen.map((s) => s.status),
      [...conflicts.map(() => 409), 200],
      `Form ${form}`,
    );

    // /openapi.json says so.
    const doc = (await (await fetch(`${apis[form].url}/openapi.json`)).json()) as {
      paths: Record<string, { post: { responses: Record<string, { headers?: Record<string, { schema: object }> }> } }>;
    };
    const header = doc.paths['/v1/chat/completions'].post.responses['409'].headers?.['Retry-After'];
    assert.deepEqual(header?.schema, { type: 'integer', minimum: 1, maximum: 60 });
  }

  // Both Forms at once, each with its own organisation and mode (so its own stage times): the engines only wait.
  it('Forms A and B: a duplicate with maxRetries: 2 returns the completion; the 409s said to wait 1–60 s', async () => {
    // Both settled before the first failure is reported, so neither runs on into the next test.
    for (const result of await Promise.allSettled(FORMS.map(duplicateGetsReplay))) if (result.status === 'rejected') throw result.reason;
  });
});
