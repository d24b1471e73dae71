import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { newSigningSecret, signatureHeader, verifySignature } from '../../../domain/webhook-signature';

/** Completion callbacks are signed as Stripe signs its webhooks: HMAC-SHA256 of `<t>.<body>`, `t=…,v1=…`. */
describe('webhook signatures (issue 28 item 6)', () => {
  const body = '{"id":"evt_1","type":"run.ended"}';

  it('signs `<t>.<body>` with HMAC-SHA256 under the secret (a vector from openssl)', () => {
    // printf '%s' '1700000000.{"id":"evt_1","type":"run.ended"}' | openssl dgst -sha256 -hmac whsec_test
    assert.equal(
      signatureHeader('whsec_test', 1_700_000_000, body),
      't=1700000000,v1=219ce9208daff21ec94762640244c25f9d325ed9bd1dc77fe2355c44025291e5',
    );
  });

  it('verifies its own header within the tolerance, and nothing else', () => {
    const secret = newSigningSecret();
    const header = signatureHeader(secret, 1_000, body);
    assert.equal(verifySignature(header, body, secret, 1_000), true);
    assert.equal(verifySignature(header, body, secret, 1_300), true, 'five minutes late is still in time');
    assert.equal(verifySignature(header, body, secret, 1_301), false, 'a replay past five minutes is refused');
    assert.equal(verifySignature(header, `${body} `, secret, 1_000), false, 'another body');
    assert.equal(verifySignature(header, body, newSigningSecret(), 1_000), false, 'another secret');
    assert.equal(verifySignature(header.replace('t=1000', 't=1001'), body, secret, 1_000), false, 'the timestamp is signed');
    assert.equal(verifySignature('v1=zz', body, secret, 1_000), false);
    assert.equal(verifySignature(`t=1000,v1=${'0'.repeat(64)},${header.split(',')[1]}`, body, secret, 1_000), true, 'any v1 may match');
  });

  it("the docs' receiver snippet accepts a real signature and refuses a stale, a tampered and a foreign one", () => {
    const doc = fs.readFileSync(path.join(__dirname, '..', '..', '..', 'docs', 'api-extensions.md'), 'utf8');
    const snippet = doc.split('```').find((block) => block.startsWith('js\n') && block.includes('function verifyQuorum'));
    assert.ok(snippet, 'the snippet is in docs/api-extensions.md');
    // As a receiver's module would run it: its import from node:crypto, its one export.
    const body = snippet
      .slice(3)
      .replace(/^\s*import .*$/m, '')
      .replace('export function', 'function');
    const verifyQuorum = new Function('createHmac', 'timingSafeEqual', `${body}\nreturn verifyQuorum;`)(
      crypto.createHmac,
      crypto.timingSafeEqual,
    ) as (rawBody: string, header: string, secret: string) => boolean;
    const secret = newSigningSecret();
    const now = Math.floor(Date.now() / 1000);
    assert.equal(verifyQuorum('{"a":1}', signatureHeader(secret, now, '{"a":1}'), secret), true);
    assert.equal(verifyQuorum('{"a":1}', signatureHeader(secret, now - 301, '{"a":1}'), secret), false);
    assert.equal(verifyQuorum('{"a":2}', signatureHeader(secret, now, '{"a":1}'), secret), false);
    assert.equal(verifyQuorum('{"a":1}', signatureHeader(newSigningSecret(), now, '{"a":1}'), secret), false);
  });

  it('makes a fresh 32-byte secret each time, prefixed whsec_', () => {
    const a = newSigningSecret();
    assert.match(a, /^whsec_[A-Za-z0-9_-]{43}$/);
    assert.notEqual(a, newSigningSecret());
  });
});
