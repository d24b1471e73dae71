import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { customMode, startProductWorkers } from '../deliberation/helpers';
import { FORMS, newOrg, startApi, type Api } from './helpers';

type WithSvc = OpenAI.Chat.Completions.ChatCompletion & { svc: Record<string, unknown> };

/**
 * Each sim engine call takes this long: the call below is 15 s (one seat pass, then the judge), or up to 38 s when its
 * judge finds the seats split and sends them to a critique round (the judge's reading order is the call's own draw).
 */
const ENGINE_MS = 7_500;

/**
 * Issue 28 item 7: a 409 `request_in_progress` carries a `Retry-After` of what the running call has left, so the
 * official `openai` client's own retries (`maxRetries: 2`) of a duplicate sent while a 15 s call runs end with its
 * replay instead of raising 409 (as with the old fixed `Retry-After: 5`: two waits of 5 s end before the call does).
 */
describe('retries that converge: the openai client’s own retries of a running call get its replay', function () {
  this.timeout(300_000);
  let workers: { stop(): Promise<void> };
  const apis = {} as Record<(typeof FORMS)[number], Api>;

  before(async () => {
    workers = await startProductWorkers({ QUORUM_SIM_LATENCY: `fixed:${ENGINE_MS}` });
    for (const form of FORMS) apis[form] = await startApi(form);
  });
  after(async () => {
    for (const form of FORMS) await apis[form].close();
    await workers.stop();
  });

  for (const form of FORMS) {
    it(`Form ${form}: a duplicate with maxRetries: 2 returns the completion; the 409s said to wait 1–60 s`, async () => {
      const org = await newOrg();
      // A mode of its own: its stage times are then this test's calls alone, not the instant sim calls other tests
      // make on the shared system modes.
      const mode = await customMode(org.orgId, 'quorum-panel', {});
      const model = form === 'A' ? mode.id : mode.ticker;
      const baseURL = `${apis[form].url}/v1`;
      // One question throughout: the sim engines answer a question alike every time, so every call of it takes as long.
      const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [
        { role: 'user', content: 'Compare two approaches to caching and explain the trade-offs, step by step.' },
      ];
      const plain = new OpenAI({ baseURL, apiKey: org.ownerKey, maxRetries: 0, timeout: 120_000 });

      // One call before: the mode's stage times are then observed, not the spec's.
      const warmStart = Date.now();
      await plain.chat.completions.create({ model, messages });
      const callMs = Date.now() - warmStart;
      assert.ok(callMs > 12_000, `a call takes about 15 s here (took ${callMs} ms)`);

      const seen: { status: number; retryAfter: string | null }[] = [];
      const recording: typeof fetch = async (input, init) => {
        const res = await fetch(input, init);
        seen.push({ status: res.status, retryAfter: res.headers.get('retry-after') });
        return res;
      };
      const retrying = new OpenAI({ baseURL, apiKey: org.ownerKey, maxRetries: 2, timeout: 120_000, fetch: recording });

      const idem = randomUUID();
      const first = plain.chat.completions.create({ model, messages }, { headers: { 'Idempotency-Key': idem } });
      await new Promise((r) => setTimeout(r, 1_000));
      const duplicate = (await retrying.chat.completions.create({ model, messages }, { headers: { 'Idempotency-Key': idem } })) as WithSvc;
      const original = (await first) as WithSvc;

      assert.equal(duplicate.svc.replayed, true);
      assert.equal(duplicate.svc.request_id, original.svc.request_id);
      assert.equal(duplicate.choices[0].message.content, original.choices[0].message.content);
      const conflicts = seen.filter((s) => s.status === 409);
      assert.ok(conflicts.length >= 1 && conflicts.length <= 2, JSON.stringify(seen));
      for (const c of conflicts) {
        const wait = Number(c.retryAfter);
        assert.ok(Number.isInteger(wait) && wait >= 1 && wait <= 60, `Retry-After ${c.retryAfter}`);
      }
      assert.deepEqual(
        seen.map((s) => s.status),
        [...conflicts.map(() => 409), 200],
      );

      // /openapi.json says so.
      const doc = (await (await fetch(`${apis[form].url}/openapi.json`)).json()) as {
        paths: Record<string, { post: { responses: Record<string, { headers?: Record<string, { schema: object }> }> } }>;
      };
      const header = doc.paths['/v1/chat/completions'].post.responses['409'].headers?.['Retry-After'];
      assert.deepEqual(header?.schema, { type: 'integer', minimum: 1, maximum: 60 });
    });
  }
});
