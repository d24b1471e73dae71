import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createDb, REQUEST_PATH_DB_TIMEOUTS, type Db } from '../../../db/knex';
import { stack } from '../../harness/stack';
import { moneySnapshot, newOrg, startApi } from './helpers';

/** Every process of the test Postgres: the postmaster (from its pid file) and its children. */
async function postgresPids(db: Db): Promise<number[]> {
  const dir = (await db.raw<{ rows: { setting: string }[] }>("select setting from pg_settings where name = 'data_directory'")).rows[0]
    .setting;
  const postmaster = Number(fs.readFileSync(path.join(dir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(postmaster)], { encoding: 'utf8' })
    .split('\n')
    .map((l) => Number(l.trim()))
    .filter((n) => n > 0);
  return [postmaster, ...children];
}

/**
 * The test Temporal dev server's process: the one this mocha process started (its child), not another test run's on
 * the same machine (a sharded `npm test` runs one per shard).
 */
function temporalPids(): number[] {
  return execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(process.pid)], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => /temporal server start-dev/.test(l))
    .map((l) => Number(l.trim().split(/\s+/)[0]))
    .filter((n) => n > 0);
}

describe('a stalled dependency: the request path fails closed promptly and recovers by itself', function () {
  this.timeout(60_000);

  it('Postgres paused: 503 service_unavailable with Retry-After within a few seconds, then 200 once it runs again', async () => {
    const { dbUrl } = stack();
    const org = await newOrg();
    const db = createDb(dbUrl, 4, REQUEST_PATH_DB_TIMEOUTS);
    const api = await startApi('B', { db });
    const url = `${api.url}/v1/models`;
    const models = (): Promise<Response> => fetch(url, { headers: { authorization: `Bearer ${org.ownerKey}` } });
    try {
      assert.equal((await models()).status, 200);
      const pids = await postgresPids(stack().db);
      for (const pid of pids) process.kill(pid, 'SIGSTOP');
      let stalled: Response;
      const started = Date.now();
      try {
        stalled = await models();
      } finally {
        for (const pid of pids) process.kill(pid, 'SIGCONT');
      }
      const waited = Date.now() - started;
      const body = (await stalled.json()) as { error?: { code: string } };
      assert.deepEqual([stalled.status, body.error?.code], [503, 'service_unavailable']);
      assert.match(stalled.headers.get('retry-after') ?? '', /^\d+$/);
      assert.ok(waited < 8_000, `answered after ${waited} ms`);
      // No restart, no operator: the next request after Postgres resumes is served.
      let recovered = 0;
      for (let i = 0; i < 20 && recovered !== 200; i++) {
        recovered = (await models()).status;
        if (recovered !== 200) await new Promise((r) => setTimeout(r, 500));
      }
      assert.equal(recovered, 200);
    } finally {
      await api.close();
      await db.destroy();
    }
  });

  it('Temporal paused: a completion is refused 503 within the start deadline, nothing billed, its key free to retry', async () => {
    const { db } = stack();
    const org = await newOrg();
    const api = await startApi('B');
    const url = `${api.url}/v1/chat/completions`;
    const complete = (): Promise<Response> =>
      fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${org.ownerKey}`, 'content-type': 'application/json', 'idempotency-key': `stall-${org.orgId}` },
        body: JSON.stringify({ model: 'QRM:EXPR', messages: [{ role: 'user', content: 'Name a colour.' }] }),
      });
    const before = await moneySnapshot(org.orgId);
    const pids = temporalPids();
    assert.equal(pids.length, 1, `one Temporal server expected, found ${pids.join(', ')}`);
    try {
      process.kill(pids[0], 'SIGSTOP');
      const started = Date.now();
      let stalled: Response;
      try {
        stalled = await complete();
      } finally {
        process.kill(pids[0], 'SIGCONT');
      }
      const body = (await stalled.json()) as { error?: { code: string } };
      assert.deepEqual([stalled.status, body.error?.code], [503, 'service_unavailable']);
      assert.ok(Date.now() - started < 10_000, `answered after ${Date.now() - started} ms`);
      assert.match(stalled.headers.get('retry-after') ?? '', /^\d+$/);
      assert.equal(await moneySnapshot(org.orgId), before);
      const request = await db('requests').where({ org_id: org.orgId }).first('state', 'error_code');
      assert.deepEqual(request, { state: 'failed', error_code: 'service_unavailable' }, 'the key may run again');
    } finally {
      await api.close();
    }
  });
});
