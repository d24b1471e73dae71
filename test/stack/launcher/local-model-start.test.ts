import assert from 'node:assert/strict';
import { startSupervisor } from '../../harness/supervisor';
import { assertGone, ctrlC, demoKey, healthy, launcherSuite, supervisorEnv } from './helpers';

/**
 * `npm start` with its real local model. A file of its own because it runs alone on the machine, after the shards
 * (test/harness/shards.ts ALONE): llama.cpp on 2 threads waits on each other spinning, so a call that takes 50 s alone
 * ran past undici's 300 s header timeout beside another shard. The launcher's other tests run in the shards.
 */
describe('npm start: the supervisor with the local model', function () {
  this.timeout(300_000);
  const scratchDir = launcherSuite();

  it('QUORUM_LOCAL_MODEL=on: the demo answers with the real local model (seat, judge and synthesis), labelled so; Ctrl-C stops the model server too', async () => {
    const localDir = scratchDir('quorum-start-local-');
    const { env, ports } = await supervisorEnv(localDir, { QUORUM_LOCAL_MODEL: 'on' });
    const s = await startSupervisor(env);
    const modelUrl = /local model ready at (http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(s.output())?.[1];
    assert.ok(modelUrl, s.output());
    const key = demoKey(s);
    const ask = async (model: string, content: string): Promise<{ content: string; svc: Record<string, unknown> }> => {
      const res = await fetch(`http://127.0.0.1:${ports.PORT}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages: [{ role: 'user', content }] }),
      });
      const body = (await res.json()) as { choices: { message: { content: string } }[]; svc: Record<string, unknown> };
      assert.equal(res.status, 200, JSON.stringify(body));
      return { content: body.choices[0]?.message.content ?? '', svc: body.svc };
    };
    const express = await ask('QRM:EXPR', 'Name one planet of the solar system.');
    assert.ok(express.content.trim().length > 0);
    assert.doesNotMatch(express.content, /simulated/i);
    // A prompt the classifier sends to the panel lane.
    const panel = await ask('QRM:PANL', 'Why is the sky blue? Compare Rayleigh and Mie scattering, step by step.');
    const receipt = await fetch(`http://127.0.0.1:${ports.PORT}/v1/receipts/${String(panel.svc.request_id)}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    const r = (await receipt.json()) as { receipt: { seats: { model_used: string }[] } };
    assert.ok(r.receipt.seats.length >= 2, JSON.stringify(r));
    assert.deepEqual([...new Set(r.receipt.seats.map((x) => x.model_used))], ['local/smollm2'], 'every seat on the local model');
    assert.equal(panel.svc.best_seat_judged_by, 'llm', 'the local model judged, and its verdict was read');
    // The local panel (issues 39 and 52): seats on the one model, tuned apart, answer differently; they vote, two
    // first and the third only when those two do not state one answer (an open question states none).
    const local = await ask('DEMO:LOCL', 'Give one reason why the sky looks blue.');
    const tuned = await fetch(`http://127.0.0.1:${ports.PORT}/v1/receipts/${String(local.svc.request_id)}?include_transcript=true`, {
      headers: { authorization: `Bearer ${key}` },
    });
    const seats = ((await tuned.json()) as { receipt: { seats: { model_used: string; content: string; tuning: unknown }[] } }).receipt
      .seats;
    const aggregation = local.svc.aggregation as { method: string; seats_asked: number; early_stop: boolean } | null;
    assert.equal(aggregation?.method, 'vote', JSON.stringify(local.svc));
    assert.equal(seats.length, aggregation.seats_asked, JSON.stringify(seats));
    assert.equal(aggregation.early_stop, aggregation.seats_asked === 2);
    assert.deepEqual([...new Set(seats.map((x) => x.model_used))], ['local/smollm2']);
    assert.deepEqual(
      seats.map((x) => (x.tuning as { seed: number }).seed).sort((a, b) => a - b),
      [11, 23, 37].slice(0, seats.length),
      'each seat asked with its own settings, shown in the receipt',
    );
    if (seats.length === 3)
      assert.ok(
        new Set(seats.map((x) => x.content.trim())).size >= 2,
        `the seats answered alike: ${JSON.stringify(seats.map((x) => x.content))}`,
      );
    assert.equal(await ctrlC(s), 0, s.output());
    assert.equal(await healthy(modelUrl), false, 'the model server stopped with the stack');
    await assertGone(ports, localDir);
  }).timeout(480_000); // Three panel calls on a real model on two cores: minutes, more under load.
});
