import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import { Connection, type TLSConfig } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { generate } from 'selfsigned';
import { loadConfig } from '../../../infra/config';
import { temporalConnectOptions, type TemporalConnectOptions } from '../../../infra/temporal-connection';

// No stack: Temporal's client variables → connection options, then a real TLS handshake with a loopback server.
const ADDRESS = 'temporal.example:7233';
const options = (env: NodeJS.ProcessEnv): TemporalConnectOptions =>
  temporalConnectOptions(loadConfig({ TEMPORAL_ADDRESS: ADDRESS, ...env }));
const tlsOf = (o: TemporalConnectOptions): TLSConfig => {
  assert.equal(typeof o.tls, 'object', 'TLS configured');
  return o.tls as TLSConfig;
};

describe('infra: Temporal connection options from the environment', () => {
  let dir: string;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-temporal-tls-'));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('an address alone is a plain connection: no TLS, no API key', () => {
    assert.deepEqual(options({}), { address: ADDRESS });
    assert.deepEqual(options({ TEMPORAL_TLS: 'false' }), { address: ADDRESS, tls: false });
  });

  it('an API key turns TLS on, unless TEMPORAL_TLS says off', () => {
    assert.deepEqual(options({ TEMPORAL_API_KEY: 'key-123456789' }), { address: ADDRESS, apiKey: 'key-123456789', tls: true });
    assert.deepEqual(options({ TEMPORAL_API_KEY: 'key-123456789', TEMPORAL_TLS: 'false' }), {
      address: ADDRESS,
      apiKey: 'key-123456789',
      tls: false,
    });
    assert.deepEqual(options({ TEMPORAL_API_KEY: 'key-123456789', TEMPORAL_TLS: '1' }).apiKey, 'key-123456789');
    assert.equal(tlsOf(options({ TEMPORAL_API_KEY: 'key-123456789', TEMPORAL_TLS: 'TRUE' })).clientCertPair, undefined);
  });

  it('TEMPORAL_TLS=true alone, or any TLS setting, turns TLS on with the system roots', () => {
    const on = tlsOf(options({ TEMPORAL_TLS: 'true' }));
    assert.equal(on.clientCertPair, undefined);
    assert.equal(on.serverRootCACertificate, undefined);
    assert.equal(tlsOf(options({ TEMPORAL_TLS_SERVER_NAME: 'frontend.internal' })).serverNameOverride, 'frontend.internal');
  });

  it('mTLS: the certificate, key and server CA files are read into the options, with the server name', () => {
    const [cert, key, ca] = ['CERT PEM', 'KEY PEM', 'CA PEM'];
    const tls = tlsOf(
      options({
        TEMPORAL_TLS_CLIENT_CERT_PATH: writeFile(dir, 'client.pem', cert),
        TEMPORAL_TLS_CLIENT_KEY_PATH: writeFile(dir, 'client.key', key),
        TEMPORAL_TLS_SERVER_CA_CERT_PATH: writeFile(dir, 'ca.pem', ca),
        TEMPORAL_TLS_SERVER_NAME: 'frontend.internal',
      }),
    );
    assert.equal(Buffer.from(tls.clientCertPair?.crt ?? []).toString(), cert);
    assert.equal(Buffer.from(tls.clientCertPair?.key ?? []).toString(), key);
    assert.equal(Buffer.from(tls.serverRootCACertificate ?? []).toString(), ca);
    assert.equal(tls.serverNameOverride, 'frontend.internal');
    // Temporal's _DATA forms carry the PEM itself.
    const fromData = tlsOf(options({ TEMPORAL_TLS_CLIENT_CERT_DATA: cert, TEMPORAL_TLS_CLIENT_KEY_DATA: key }));
    assert.equal(Buffer.from(fromData.clientCertPair?.crt ?? []).toString(), cert);
    assert.equal(Buffer.from(fromData.clientCertPair?.key ?? []).toString(), key);
  });

  it('a certificate without its key, or a key without its certificate, stops the start naming both variables', () => {
    for (const env of [
      { TEMPORAL_TLS_CLIENT_CERT_PATH: '/etc/temporal/client.pem' },
      { TEMPORAL_TLS_CLIENT_KEY_PATH: '/etc/temporal/client.key' },
      { TEMPORAL_TLS_CLIENT_KEY_DATA: 'KEY PEM' },
    ]) {
      assert.throws(() => loadConfig(env), /TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH/);
    }
  });

  it('refuses what Temporal would quietly drop or misread: a path and data for one file, a flag that is not one, skipping host verification', () => {
    assert.throws(
      () => loadConfig({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: '/ca.pem', TEMPORAL_TLS_SERVER_CA_CERT_DATA: 'CA PEM' }),
      /TEMPORAL_TLS_SERVER_CA_CERT_PATH or TEMPORAL_TLS_SERVER_CA_CERT_DATA, not both/,
    );
    assert.throws(() => loadConfig({ TEMPORAL_TLS: 'yes' }), /TEMPORAL_TLS:/);
    assert.throws(
      () => loadConfig({ TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: 'true' }),
      /TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: not supported/,
    );
    assert.equal(loadConfig({ TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: 'false' }).TEMPORAL_TLS_DISABLE_HOST_VERIFICATION, false);
  });

  it('a file that cannot be read stops the start naming its variable and path', () => {
    const missing = path.join(dir, 'absent.pem');
    assert.throws(
      () => options({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: missing }),
      (err: Error) => err.message === `TEMPORAL_TLS_SERVER_CA_CERT_PATH: cannot read ${missing} (ENOENT)`,
    );
  });

  it('no error carries a secret: neither the API key nor the key PEM', () => {
    const apiKey = 'tmprl-api-key-0123456789abcdef';
    const keyPem = '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n';
    const messages: string[] = [];
    for (const env of [
      { TEMPORAL_API_KEY: apiKey, TEMPORAL_TLS_CLIENT_KEY_DATA: keyPem },
      { TEMPORAL_API_KEY: apiKey, TEMPORAL_TLS: 'maybe', TEMPORAL_TLS_CLIENT_KEY_DATA: keyPem, TEMPORAL_TLS_CLIENT_KEY_PATH: '/k' },
      { TEMPORAL_API_KEY: apiKey, TEMPORAL_TLS_CLIENT_KEY_PATH: keyPem },
    ]) {
      try {
        options(env);
      } catch (err) {
        messages.push((err as Error).message);
      }
    }
    assert.equal(messages.length, 3, 'each setting is refused');
    for (const m of messages) {
      assert.ok(!m.includes(apiKey), m);
      assert.ok(!m.includes('MIIEvQIBADANBgkqhkiG9w0BAQEFAASC'), m);
    }
  });
});

describe('infra: Temporal connection options complete a real TLS handshake', function () {
  this.timeout(60_000);
  let dir: string;
  let server: http2.Http2SecureServer;
  let clientFingerprint: string;
  const seen: { serverName?: string; peerFingerprint?: string; authorized?: boolean; authorization?: string }[] = [];
  let env: NodeJS.ProcessEnv;
  const sessions = new Set<http2.ServerHttp2Session>();

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-temporal-tls-'));
    const ca = await generate([{ name: 'commonName', value: 'Quorum test CA' }], {
      keyType: 'ec',
      algorithm: 'sha256',
      extensions: [
        { name: 'basicConstraints', cA: true, critical: true },
        { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
      ],
    });
    const signedByCa = (cn: string, usage: 'serverAuth' | 'clientAuth'): ReturnType<typeof generate> =>
      generate([{ name: 'commonName', value: cn }], {
        keyType: 'ec',
        algorithm: 'sha256',
        ca: { key: ca.private, cert: ca.cert },
        extensions: [
          { name: 'basicConstraints', cA: false, critical: true },
          { name: 'keyUsage', digitalSignature: true, critical: true },
          { name: 'extKeyUsage', [usage]: true },
          { name: 'subjectAltName', altNames: [{ type: 2, value: cn }] },
        ],
      });
    // The server's certificate names temporal.test, not 127.0.0.1: only TEMPORAL_TLS_SERVER_NAME makes it match.
    const [serverCert, clientCert] = await Promise.all([
      signedByCa('temporal.test', 'serverAuth'),
      signedByCa('quorum-worker', 'clientAuth'),
    ]);
    clientFingerprint = new X509Certificate(clientCert.cert).fingerprint256;
    server = http2.createSecureServer({
      key: serverCert.private,
      cert: serverCert.cert,
      ca: ca.cert,
      requestCert: true,
      rejectUnauthorized: false,
    });
    // The clients keep their sessions open for a retry; the server must end them itself to close.
    server.on('session', (session) => sessions.add(session));
    server.on('secureConnection', (socket: TLSSocket) => {
      const servername = socket.servername;
      seen.push({
        serverName: typeof servername === 'string' ? servername : undefined,
        peerFingerprint: socket.getPeerX509Certificate()?.fingerprint256,
        authorized: socket.authorized,
      });
    });
    // Past the handshake, every call is refused as gRPC does (UNAUTHENTICATED): the connection then fails.
    server.on('stream', (stream, headers) => {
      const last = seen.at(-1);
      if (last) last.authorization = headers.authorization;
      stream.respond(
        { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '16', 'grpc-message': 'test server' },
        { endStream: true },
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    env = {
      TEMPORAL_ADDRESS: `127.0.0.1:${(server.address() as AddressInfo).port}`,
      TEMPORAL_API_KEY: 'tmprl-test-key-0123456789',
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: writeFile(dir, 'ca.pem', ca.cert),
      TEMPORAL_TLS_SERVER_NAME: 'temporal.test',
      TEMPORAL_TLS_CLIENT_CERT_PATH: writeFile(dir, 'client.pem', clientCert.cert),
      TEMPORAL_TLS_CLIENT_KEY_PATH: writeFile(dir, 'client.key', clientCert.private),
    };
  });
  after(async () => {
    for (const session of sessions) session.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    fs.rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    seen.length = 0;
  });

  const assertHandshake = (): void => {
    const first = seen[0];
    assert.ok(first, 'the server saw a TLS connection');
    assert.equal(first.serverName, 'temporal.test', 'SNI from TEMPORAL_TLS_SERVER_NAME');
    assert.equal(first.peerFingerprint, clientFingerprint, 'the client presented the certificate from TEMPORAL_TLS_CLIENT_CERT_PATH');
    assert.equal(first.authorized, true, 'a certificate signed by the CA the server trusts');
    assert.equal(first.authorization, 'Bearer tmprl-test-key-0123456789', 'the API key rides on the encrypted connection');
  };

  it('the client connection (API, CLI): TLS with SNI, the client certificate and the API key', async () => {
    await assert.rejects(Connection.connect({ ...temporalConnectOptions(loadConfig(env)), connectTimeout: 10_000 }));
    assertHandshake();
  });

  it("the worker's native connection: the same options, the same handshake", async () => {
    await assert.rejects(NativeConnection.connect(temporalConnectOptions(loadConfig(env))));
    assertHandshake();
  });

  it('without the server CA the client refuses the server: the CA file is what it trusts', async () => {
    const withoutCa = { ...env, TEMPORAL_TLS_SERVER_CA_CERT_PATH: undefined };
    await assert.rejects(Connection.connect({ ...temporalConnectOptions(loadConfig(withoutCa)), connectTimeout: 2_000 }));
    assert.equal(seen.filter((s) => s.authorization !== undefined).length, 0, 'no call reached the server over an unverified connection');
  });
});

function writeFile(dir: string, name: string, text: string): string {
  const p = path.join(dir, name);
  fs.writeFileSync(p, text);
  return p;
}
