import { Connection } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { createApp } from '../../../api/app';
import { createDb } from '../../../db/knex';
import { createLogger } from '../../../infra/log';
import { freePort } from '../../../infra/free-port';
import { createWorkers } from '../../../worker/workers';
import { stack } from '../../harness/stack';
import { entrySettingsOf } from '../../harness/settings';

const log = createLogger('test', () => undefined);

async function listen(app: ReturnType<typeof createApp>): Promise<{ url: string; server: Server }> {
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe('API edge: health and unknown routes', () => {
  let workers: Worker[] = [];
  let running: Promise<unknown>;
  let url: string;
  let server: Server;

  before(async () => {
    const { env, db, namespace } = stack();
    workers = await createWorkers({
      connection: env.nativeConnection,
      namespace,
      deps: { db, log, ...entrySettingsOf(process.env, log) },
    });
    running = Promise.all(workers.map((w) => w.run()));
    ({ url, server } = await listen(createApp({ db, temporal: env.connection, namespace, log, ...entrySettingsOf(process.env, log) })));
  });

  after(async () => {
    server.close();
    for (const w of workers) w.shutdown();
    await running;
  });

  it('answers /healthz 200 when Postgres, Temporal and a poller on each task queue answer', async () => {
    let body: { ok: boolean; workers: Record<string, number> } = { ok: false, workers: {} };
    // Pollers register with the server a moment after the workers start.
    for (let i = 0; i < 50 && !body.ok; i++) {
      const res = await fetch(`${url}/healthz`);
      body = (await res.json()) as typeof body;
      if (res.status === 200) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(body.ok, true, JSON.stringify(body));
    assert.ok(body.workers.deliberation >= 1 && body.workers.benchmark >= 1);
  });

  it('answers /healthz 503 naming Postgres when the database is unreachable, and fails requests closed with 503', async () => {
    const { env, namespace } = stack();
    const deadDb = createDb(`postgres://nobody:x@127.0.0.1:${await freePort()}/none`, 1);
    const dead = await listen(createApp({ db: deadDb, temporal: env.connection, namespace, log, ...entrySettingsOf(process.env, log) }));
    try {
      const res = await fetch(`${dead.url}/healthz`);
      assert.equal(res.status, 503);
      const body = (await res.json()) as { ok: boolean; postgres: string; down: string[] };
      assert.equal(body.ok, false);
      assert.equal(body.postgres, 'down');
      assert.ok(body.down.includes('postgres'));
      // The access check cannot run without its database: it fails closed, 503 and retryable.
      const models = await fetch(`${dead.url}/v1/models`, {
        headers: { authorization: 'Bearer qrm_live_00000000000000000000000000000000' },
      });
      assert.equal(models.status, 503);
      assert.equal(((await models.json()) as { error: { code: string } }).error.code, 'service_unavailable');
    } finally {
      dead.server.close();
      await deadDb.destroy();
    }
  });

  it('answers /healthz 503 naming Temporal when the server is unreachable', async () => {
    const { db, namespace } = stack();
    const deadTemporal = Connection.lazy({ address: `127.0.0.1:${await freePort()}`, connectTimeout: 1_000 });
    const dead = await listen(createApp({ db, temporal: deadTemporal, namespace, log, ...entrySettingsOf(process.env, log) }));
    try {
      const res = await fetch(`${dead.url}/healthz`);
      assert.equal(res.status, 503);
      const body = (await res.json()) as { ok: boolean; postgres: string; temporal: string; down: string[] };
      assert.deepEqual([body.ok, body.postgres, body.temporal], [false, 'up', 'down']);
      assert.ok(body.down.includes('temporal'));
    } finally {
      dead.server.close();
    }
  });

  it('answers /healthz 503 naming the task queues whose worker has gone', async () => {
    const { env, db, namespace } = stack();
    // A short freshness window stands in for the 90 s one: a worker that stopped polling is then gone at once.
    const app = await listen(
      createApp({ db, temporal: env.connection, namespace, log, pollerFreshMs: 1_500, ...entrySettingsOf(process.env, log) }),
    );
    try {
      for (const w of workers) w.shutdown();
      await running;
      workers = [];
      await new Promise((r) => setTimeout(r, 2_500));
      const res = await fetch(`${app.url}/healthz`);
      assert.equal(res.status, 503);
      const body = (await res.json()) as { ok: boolean; down: string[] };
      assert.deepEqual(body.down.sort(), ['worker:benchmark', 'worker:deliberation']);
    } finally {
      app.server.close();
    }
  });

  it('gives unknown paths 404 and wrong methods 405 in the error shape', async () => {
    const missing = await fetch(`${url}/v1/nowhere`);
    assert.equal(missing.status, 404);
    const body404 = (await missing.json()) as { error: { code: string; type: string; param: null } };
    assert.deepEqual([body404.error.code, body404.error.type, body404.error.param], ['not_found', 'invalid_request_error', null]);

    const wrong = await fetch(`${url}/healthz`, { method: 'DELETE' });
    assert.equal(wrong.status, 405);
    const body405 = (await wrong.json()) as { error: { code: string } };
    assert.equal(body405.error.code, 'method_not_allowed');
  });
});
