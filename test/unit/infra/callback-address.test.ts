import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApplicationFailure } from '@temporalio/activity';
import { CALLBACK_ADDRESS_REFUSED, sendSigned } from '../../../activities/callbacks';
import { assertPublicCallbackHost, CallbackAddressRefused, guardedLookup, refusedRange } from '../../../infra/callback-address';

/** SSRF rules of completion callbacks (issue 28 item 6): in production, nothing inside the deployment's networks. */
describe('callback addresses (issue 28 item 6)', () => {
  it('refuses loopback, private, link-local, CGNAT, unique-local and metadata addresses, in both families', () => {
    const refused: Record<string, string> = {
      '127.0.0.1': 'loopback',
      '127.255.0.9': 'loopback',
      '0.0.0.0': 'this network',
      '10.1.2.3': 'private',
      '172.16.0.1': 'private',
      '172.31.255.255': 'private',
      '192.168.1.1': 'private',
      '100.64.0.1': 'carrier-grade NAT',
      '100.100.100.200': 'carrier-grade NAT', // Alibaba Cloud's metadata service
      '169.254.169.254': 'link-local', // AWS, GCP and Azure metadata
      '::1': 'loopback',
      '::': 'unspecified',
      'fd00:ec2::254': 'unique-local', // AWS's IPv6 metadata
      'fc00::1': 'unique-local',
      'fe80::1': 'link-local',
    };
    for (const [address, range] of Object.entries(refused)) assert.equal(refusedRange(address), range, address);
    for (const mapped of ['::ffff:127.0.0.1', '::ffff:10.0.0.1', '::ffff:a9fe:a9fe']) assert.notEqual(refusedRange(mapped), null, mapped);
  });

  it('allows public addresses, including the neighbours of each refused range', () => {
    for (const address of [
      '8.8.8.8',
      '1.1.1.1',
      '172.15.255.255',
      '172.32.0.0',
      '100.63.255.255',
      '100.128.0.0',
      '11.0.0.1',
      '2606:4700:4700::1111',
    ])
      assert.equal(refusedRange(address), null, address);
  });

  it('the launch check: names that resolve to loopback are refused in production only; a name that does not resolve is refused', async () => {
    await assert.rejects(assertPublicCallbackHost(new URL('http://localhost:9/x'), true), CallbackAddressRefused);
    await assert.rejects(assertPublicCallbackHost(new URL('http://[::1]:9/x'), true), /loopback/);
    await assert.rejects(assertPublicCallbackHost(new URL('https://nowhere.invalid/x'), true), /does not resolve/);
    await assertPublicCallbackHost(new URL('http://localhost:9/x'), false);
    await assertPublicCallbackHost(new URL('http://8.8.8.8/x'), true);
  });

  it("the socket's lookup refuses a name resolving to loopback in production, so the connection never uses an unchecked address", async () => {
    const resolve = (production: boolean): Promise<unknown> =>
      new Promise((done, fail) => guardedLookup(production)('localhost', {}, (err, address) => (err ? fail(err) : done(address))));
    await assert.rejects(resolve(true), CallbackAddressRefused);
    assert.match(String(await resolve(false)), /^(127\.0\.0\.1|::1)$/);
  });

  describe('at delivery', () => {
    let server: Server;
    let port: number;
    let hits = 0;
    before(async () => {
      server = createServer((req, res) => {
        hits++;
        req.resume();
        res.end();
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      port = (server.address() as AddressInfo).port;
    });
    after(() => new Promise((r) => server.close(r)));

    it('in production a loopback receiver is refused for good, before any request; in development it is delivered', async () => {
      const attempt = (url: string, production: boolean): Promise<number> =>
        sendSigned({ url, body: '{}', eventId: 'evt_1', secret: 'whsec_x', production });
      for (const url of [`http://127.0.0.1:${port}/hook`, `http://localhost:${port}/hook`]) {
        await assert.rejects(attempt(url, true), (err: unknown) => {
          assert.ok(err instanceof ApplicationFailure, String(err));
          assert.equal(err.type, CALLBACK_ADDRESS_REFUSED);
          assert.equal(err.nonRetryable, true);
          return true;
        });
      }
      assert.equal(hits, 0, 'nothing reached the receiver');
      assert.equal(await attempt(`http://localhost:${port}/hook`, false), 200);
      assert.equal(hits, 1);
    });
  });
});
