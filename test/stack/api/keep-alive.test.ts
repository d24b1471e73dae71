import assert from 'node:assert/strict';
import http from 'node:http';
import { KEEP_ALIVE_TIMEOUT_MS } from '../../../api/listen';
import { newOrg, startApi, type Api } from './helpers';

function get(agent: http.Agent, url: string, key: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent, headers: { authorization: `Bearer ${key}` } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      })
      .on('error', reject);
  });
}

describe('API: keep-alive', function () {
  this.timeout(30_000);
  let api: Api;
  before(async () => {
    api = await startApi('B');
  });
  after(() => api.close());

  it('a connection idle longer than Node’s old 5 s default is still open and reused', async () => {
    const org = await newOrg();
    let connections = 0;
    api.server.on('connection', () => connections++);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    assert.equal(await get(agent, `${api.url}/v1/models`, org.ownerKey), 200);
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    assert.equal(await get(agent, `${api.url}/v1/models`, org.ownerKey), 200);
    assert.equal(connections, 1, 'the second request reused the first connection');
    assert.ok(api.server.keepAliveTimeout >= KEEP_ALIVE_TIMEOUT_MS && api.server.headersTimeout > api.server.keepAliveTimeout);
    agent.destroy();
  });
});
