import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { EngineError } from '../../../engines/errors';
import { postJson } from '../../../engines/http';

/** The transport under every API-key adapter, against a real HTTP server that misbehaves in the ways a provider can. */
describe('engines: one JSON POST to a provider (postJson, undici)', () => {
  let server: http.Server;
  let base: string;
  before(async () => {
    server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.url === '/stall') {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.write('{"a":'); // and never the rest
        } else if (req.url === '/slow') setTimeout(() => res.end('{"a":1}'), 2_000);
        else res.end('{"a":1}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  const post = (url: string, deadline: AbortSignal, signal?: AbortSignal): Promise<{ a: number }> =>
    postJson({ url, headers: {}, body: { q: 1 }, schema: z.object({ a: z.number() }), deadline, signal, engineId: 'e/m', secrets: [] });
  const failure = async (p: Promise<unknown>): Promise<EngineError> => {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof EngineError, `an EngineError, got ${String(err)}`);
    return err;
  };

  it('answers with the schema-checked body', async () => {
    assert.deepEqual(await post(`${base}/ok`, AbortSignal.timeout(2_000)), { a: 1 });
  });

  it('a provider that stalls mid-body times out at the deadline (retryable)', async () => {
    const started = performance.now();
    const err = await failure(post(`${base}/stall`, AbortSignal.timeout(200)));
    assert.equal(err.kind, 'timeout');
    assert.equal(err.retryable, true);
    assert.ok(performance.now() - started < 1_500, 'ended near its deadline');
  });

  it("the caller's cancellation is a permanent `aborted`, not a timeout", async () => {
    const caller = new AbortController();
    setTimeout(() => caller.abort(), 100);
    const err = await failure(post(`${base}/slow`, AbortSignal.timeout(5_000), caller.signal));
    assert.equal(err.kind, 'aborted');
    assert.equal(err.retryable, false);
  });

  it('a refused connection names the socket code to the caller, the address only to the log', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const err = await failure(post(`http://127.0.0.1:${port}/x`, AbortSignal.timeout(2_000)));
    assert.equal(err.kind, 'connection');
    assert.equal(err.retryable, true);
    assert.equal(err.reason, 'provider unreachable (ECONNREFUSED)');
    assert.match(err.message, new RegExp(`ECONNREFUSED 127\\.0\\.0\\.1:${port}`));
  });
});
