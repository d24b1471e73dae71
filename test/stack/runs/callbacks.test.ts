import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { RunEndedEventSchema } from '../../../api/v1/run-resources';
import { getRun } from '../../../db/repositories/runs';
import { workflowIds } from '../../../domain/workflow-ids';
import { call, newKey, startApi, type Api } from '../api/helpers';
import { Visitor } from '../console/helpers';
import { recordHistory, startProductWorkers } from '../deliberation/helpers';
import { stack } from '../../harness/stack';
import { Receiver, verifies } from '../../harness/webhook-receiver';
import { demoModes, untilEnded } from './helpers';

/**
 * Issue 28 item 6: a run launched with `svc.callback_url` POSTs one signed `run.ended` event to it when it ends, after
 * its end is written; a receiver's 5xx is retried with the same event, its 4xx is final; production refuses a
 * callback into the deployment's own networks at launch; the console's rotation shows a secret once and signatures
 * follow it. Signatures are checked here with node:crypto alone, as a receiver would (Stripe's scheme).
 */

const PASSWORD = 'correct horse battery staple';

describe('runs: signed completion callbacks (issue 28 item 6)', function () {
  this.timeout(300_000);
  let workers: { stop(): Promise<void> };
  let a: Api;
  let b: Api;
  const receiver = new Receiver();
  before(async () => {
    workers = await startProductWorkers();
    // The retries' first wait shortened from 10 s, through the setting a deployment would use.
    const env = { ...process.env, QUORUM_CALLBACK_RETRY_MS: '200' };
    b = await startApi('B', { env });
    a = await startApi('A', { env });
    await receiver.start();
  });
  after(async () => {
    await receiver.close();
    await a.close();
    await b.close();
    await workers.stop();
  });

  /** A console owner of a fresh organisation with the demo modes and a test key (runs on sim engines, billed nothing). */
  async function owner(): Promise<{ visitor: Visitor; orgId: string; key: string; modes: Awaited<ReturnType<typeof demoModes>> }> {
    const org = `Hooks ${randomUUID().slice(0, 8)}`;
    const visitor = new Visitor(b);
    await visitor.signUp({ email: `h-${randomUUID().slice(0, 8)}@example.com`, password: PASSWORD, org });
    const row = (await stack().db('organisations').where({ name: org }).first('id')) as { id: string };
    return { visitor, orgId: row.id, key: await newKey(row.id, { keyKind: 'test' }), modes: await demoModes(row.id) };
  }

  /** Rotates in the console; returns the secret the page shows. */
  async function rotate(visitor: Visitor): Promise<string> {
    await visitor.get('/console/keys');
    const shown = await visitor.post('/console/webhook-secret', {});
    assert.equal(shown.status, 200, shown.body.slice(0, 500));
    const secret = /id="new-webhook-secret">(whsec_[A-Za-z0-9_-]+)</.exec(shown.body)?.[1];
    assert.ok(secret, 'the new secret is on the page');
    return secret;
  }

  it('a run that ends POSTs one run.ended event signed with the secret the console showed once; a rotation re-signs (Form B, then A)', async () => {
    const o = await owner();
    const before = await o.visitor.get('/console/keys');
    assert.match(before.body, /id="webhook-secret-state">None yet/);
    const first = await rotate(o.visitor);
    const after = await o.visitor.get('/console/keys');
    assert.ok(!after.body.includes(first), 'shown once: the keys page never shows it again');
    assert.match(after.body, /id="webhook-secret-state">Created .* and shown once then\./);

    const launched = await call(b, 'POST', '/v1/tests', {
      key: o.key,
      body: { model: o.modes.strong.B, questions: { easy: 2 }, svc: { callback_url: `${receiver.url}/b` } },
    });
    assert.equal(launched.status, 200, JSON.stringify(launched.body));
    const id = launched.body.batch_id as string;
    const ended = (await untilEnded(b, o.key, 'tests', id)).body.batch as { state: string; progress: { done: number } };
    const [d] = await receiver.until('/b', 1);
    assert.equal(d.headers['content-type'], 'application/json');
    assert.ok(verifies(d, first), `signed with the console's secret: ${String(d.headers['quorum-signature'])}`);
    const event = RunEndedEventSchema.parse(JSON.parse(d.body));
    assert.equal(d.headers['quorum-event-id'], event.id);
    assert.match(String(event.id), /^evt_[0-9a-f]{32}$/);
    assert.equal(event.type, 'run.ended');
    assert.equal(event.batch_id, id);
    assert.equal(event.kind, 'test');
    assert.equal(event.state, ended.state);
    // Launched with a test key: simulated, and the event says so (issue 38 item 4).
    assert.equal(event.simulated, true);
    assert.equal(event.summary.questions, 2);
    assert.equal(event.summary.answered, ended.progress.done);
    assert.ok(Number.isInteger(event.created) && Math.abs(Date.now() / 1000 - Number(event.created)) < 600);
    const run = await getRun(stack().db, id);
    const delivery = stack().env.client.workflow.getHandle(workflowIds.runCallback(run.workflowId));
    assert.deepEqual(await delivery.result(), { eventId: event.id, status: 200 });
    await new Promise((r) => setTimeout(r, 1_500));
    assert.equal(receiver.of('/b').length, 1, 'delivered once');
    await recordHistory('test-run-callback', run.workflowId);

    const second = await rotate(o.visitor);
    assert.notEqual(second, first);
    const again = await call(a, 'POST', '/v1/tests', {
      key: o.key,
      body: { model: o.modes.strong.A, buckets: { light: 1 }, svc: { callback_url: `${receiver.url}/a` } },
    });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    await untilEnded(a, o.key, 'tests', again.body.batch_id as string);
    const [da] = await receiver.until('/a', 1);
    assert.equal((JSON.parse(da.body) as { batch_id: string }).batch_id, again.body.batch_id);
    assert.ok(verifies(da, second), 'signed with the new secret');
    assert.ok(!verifies(da, first), 'the old secret no longer verifies');
  });

  it('a receiver that answers 500 twice gets the same event again, and 200 ends it on the third try; the run had already ended', async () => {
    const o = await owner();
    const secret = await rotate(o.visitor);
    let release!: (status: number) => void;
    receiver.answers.set('/retry', [500, new Promise<number>((r) => (release = r)), 200]);
    const launched = await call(b, 'POST', '/v1/tests', {
      key: o.key,
      body: { model: o.modes.weak.B, questions: { medium: 1 }, svc: { callback_url: `${receiver.url}/retry` } },
    });
    assert.equal(launched.status, 200, JSON.stringify(launched.body));
    const id = launched.body.batch_id as string;
    // The second attempt is held open: the run is over and polls so while its delivery still waits on the receiver.
    await receiver.until('/retry', 2);
    const run = await getRun(stack().db, id);
    const runWorkflow = await stack().env.client.workflow.getHandle(run.workflowId).describe();
    assert.equal(runWorkflow.status.name, 'COMPLETED');
    const poll = await call(b, 'GET', `/v1/tests?batch_id=${id}`, { key: o.key });
    assert.equal((poll.body.batch as { state: string }).state, run.state);
    const delivery = stack().env.client.workflow.getHandle(workflowIds.runCallback(run.workflowId));
    assert.equal((await delivery.describe()).status.name, 'RUNNING');
    release(500);

    const tries = await receiver.until('/retry', 3);
    assert.deepEqual(await delivery.result(), { eventId: tries[0].headers['quorum-event-id'], status: 200 });
    assert.equal(new Set(tries.map((t) => t.headers['quorum-event-id'])).size, 1, 'one event id on every try');
    assert.equal(new Set(tries.map((t) => t.body)).size, 1, 'the same body on every try');
    assert.ok(tries.every((t) => verifies(t, secret)));
    assert.equal(receiver.of('/retry').length, 3);
    await recordHistory('run-callback-retried', workflowIds.runCallback(run.workflowId));
  });

  it("a receiver's 400 is final: no retry", async () => {
    const o = await owner();
    receiver.answers.set('/refuse', [400]);
    const launched = await call(b, 'POST', '/v1/tests', {
      key: o.key,
      body: { model: o.modes.strong.B, questions: { hard: 1 }, svc: { callback_url: `${receiver.url}/refuse` } },
    });
    assert.equal(launched.status, 200, JSON.stringify(launched.body));
    await untilEnded(b, o.key, 'tests', launched.body.batch_id as string);
    await receiver.until('/refuse', 1);
    const run = await getRun(stack().db, launched.body.batch_id as string);
    const outcome = (await stack().env.client.workflow.getHandle(workflowIds.runCallback(run.workflowId)).result()) as {
      eventId: null;
      refused: string;
    };
    assert.match(outcome.refused, /answered 400/);
    // Retries would have come 0.2, 0.4, 0.8 s apart.
    await new Promise((r) => setTimeout(r, 2_000));
    assert.equal(receiver.of('/refuse').length, 1);
    // No one had asked for a secret: the delivery made one, which the console never showed.
    assert.match((await o.visitor.get('/console/keys')).body, /id="webhook-secret-state">Made for a callback on .* and never shown/);
  });

  it('a callback URL must be http(s); production refuses a loopback one at launch with 400 callback_url_refused, in both Forms', async () => {
    const o = await owner();
    const body = (form: 'A' | 'B', url: string): Record<string, unknown> =>
      form === 'A'
        ? { model: o.modes.strong.A, buckets: { light: 1 }, svc: { callback_url: url } }
        : { model: o.modes.strong.B, questions: { easy: 1 }, svc: { callback_url: url } };
    for (const api of [a, b]) {
      const r = await call(api, 'POST', '/v1/tests', { key: o.key, body: body(api.form, 'ftp://example.com/hook') });
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.equal(r.body.error?.code, 'invalid_request');
      assert.equal(r.body.error?.param, 'svc.callback_url');
    }
    for (const form of ['A', 'B'] as const) {
      const production = await startApi(form, { env: { QUORUM_ENV: 'production' } });
      try {
        for (const url of [
          `${receiver.url}/prod`,
          'http://localhost:9/hook',
          'http://[::1]/hook',
          'http://169.254.169.254/latest/meta-data',
        ]) {
          const test = await call(production, 'POST', '/v1/tests', { key: o.key, body: body(form, url) });
          assert.equal(test.status, 400, `${form} ${url}: ${JSON.stringify(test.body)}`);
          assert.equal(test.body.error?.code, 'callback_url_refused');
          assert.equal(test.body.error?.param, 'svc.callback_url');
          const certify = await call(production, 'POST', '/v1/certify', {
            key: o.key,
            body: { model: o.modes.strong[form], dry_run: true, svc: { callback_url: url } },
          });
          assert.equal(certify.status, 400, `${form} certify ${url}: ${JSON.stringify(certify.body)}`);
          assert.equal(certify.body.error?.code, 'callback_url_refused');
        }
      } finally {
        await production.close();
      }
    }
    assert.equal(receiver.of('/prod').length, 0);
    assert.equal(
      Number((await stack().db('runs').where({ org_id: o.orgId }).count<{ n: string }[]>('* as n'))[0].n),
      0,
      'nothing launched',
    );
  });
});
