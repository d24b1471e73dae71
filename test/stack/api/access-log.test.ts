import assert from 'node:assert/strict';
import { entrySettingsOf } from '../../harness/settings';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../../api/app';
import { createLogger } from '../../../infra/log';
import { stack } from '../../harness/stack';
import { newOrg } from './helpers';

describe('API access log', () => {
  it('writes one line per request with the status sent, organisation and error code, and never the key', async () => {
    const lines: string[] = [];
    const { db, env, namespace } = stack();
    const app = createApp({
      db,
      temporal: env.connection,
      namespace,
      log: createLogger('api', (l) => lines.push(l)),
      form: 'B',
      client: env.client,
      ...entrySettingsOf(process.env),
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const org = await newOrg();
      assert.equal((await fetch(`${url}/v1/models`, { headers: { authorization: `Bearer ${org.ownerKey}` } })).status, 200);
      assert.equal((await fetch(`${url}/v1/receipts/req_nope`, { headers: { authorization: `Bearer ${org.ownerKey}` } })).status, 404);
      // Answered by a handler that writes the response itself (the OAuth server): logged with the status it sent.
      assert.equal((await fetch(`${url}/oauth/jwks`)).status, 200);
      const entries = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((e) => e.msg === 'request');
      assert.deepEqual(
        entries.map((e) => [e.method, e.path, e.status, e.org, e.code]),
        [
          ['GET', '/v1/models', 200, org.orgId, undefined],
          ['GET', '/v1/receipts/req_nope', 404, org.orgId, 'receipt_not_found'],
          ['GET', '/oauth/jwks', 200, undefined, undefined],
        ],
      );
      assert.ok(!lines.join('\n').includes(org.ownerKey), 'the key must never be logged');
    } finally {
      server.close();
    }
  });
});
