import type { Progress } from '@modelcontextprotocol/sdk/types.js';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { newOrg, PANEL, startApi, type Api } from '../api/helpers';
import { startProductWorkers } from '../deliberation/helpers';
import { connect, json } from './helpers';

/**
 * Issue 40 item 2: with engine steps of 1.5 s, shorter than the workflow task's heartbeat (4 s) at which a progress
 * query is first answered, `deliberate` still sends one progress note per step, read from the step events a
 * response's stream reads. The steps expected are counted here from the call's own `svc` and receipt.
 */
interface Round {
  round: number;
  seats: unknown[];
  converged: boolean | null;
}

describe('mcp: deliberate sends a progress note per step (1.5 s engines)', function () {
  this.timeout(120_000);
  let workers: { stop(): Promise<void> };
  let api: Api;

  before(async () => {
    workers = await startProductWorkers({ QUORUM_SIM_LATENCY: 'fixed:1500' });
    api = await startApi('B');
  });
  after(async () => {
    await api.close();
    await workers.stop();
  });

  it('one note per step: classified, each seat that answered, each judgment, each critique round, the synthesis', async () => {
    const org = await newOrg(50);
    const client = await connect(api, org.ownerKey);
    const notes: { at: number; p: Progress }[] = [];
    const question = `Compare two approaches to caching and explain the trade-offs, step by step. Why? How? ${randomUUID()}`;
    const result = await client.callTool(
      { name: 'deliberate', arguments: { model: PANEL.B, messages: [{ role: 'user', content: question }] } },
      undefined,
      { onprogress: (p) => notes.push({ at: Date.now(), p }), resetTimeoutOnProgress: true },
    );
    const doneAt = Date.now();
    assert.ok(!result.isError, JSON.stringify(result));
    const svc = (json(result) as { svc: { request_id: string; deliberation: Round[] } }).svc;
    const receipt = json(await client.callTool({ name: 'get_receipt', arguments: { request_id: svc.request_id } })).receipt as {
      lane: string;
      staff: { synthesis: unknown; grounding: { fired: boolean } };
    };
    await client.close();

    const messages = notes.map((n) => n.p.message ?? '');
    const count = (re: RegExp): number => messages.filter((m) => re.test(m)).length;
    const rounds = svc.deliberation;
    assert.equal(receipt.lane, 'panel');
    assert.ok(rounds.length >= 1);
    assert.equal(count(/^classified/), 1, messages.join(' | '));
    assert.equal(count(/^grounded/), receipt.staff.grounding.fired ? 1 : 0, messages.join(' | '));
    assert.equal(count(/^seats answering/), rounds[0].seats.length, messages.join(' | '));
    for (const r of rounds.slice(1)) {
      assert.equal(count(new RegExp(`^critique round ${r.round}: \\d+ seats revised`)), r.seats.length, messages.join(' | '));
      assert.equal(count(new RegExp(`^critique round ${r.round}: \\d+ seats revising`)), 1, messages.join(' | '));
    }
    assert.equal(count(/^judged round/), rounds.filter((r) => r.converged !== null).length, messages.join(' | '));
    assert.equal(count(/^synthesising/), receipt.staff.synthesis ? 1 : 0, messages.join(' | '));
    const steps = 1 + (receipt.staff.grounding.fired ? 1 : 0) + rounds.reduce((n, r, i) => n + r.seats.length + (i > 0 ? 1 : 0), 0);
    assert.equal(notes.length, steps + rounds.filter((r) => r.converged !== null).length + (receipt.staff.synthesis ? 1 : 0));
    assert.ok(notes.every((n) => n.at <= doneAt));
    for (let i = 1; i < notes.length; i++) assert.ok(notes[i].p.progress > notes[i - 1].p.progress, 'progress only grows');
  });
});
