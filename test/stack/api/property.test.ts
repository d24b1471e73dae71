import assert from 'node:assert/strict';
import fc from 'fast-check';
import { countMessagesTokens } from '../../../domain/tokens';
import { checkInputTokens } from '../../../operations/checks';
import type { KeyPrincipal } from '../../../operations/principal';
import { call, EXPRESS, FORMS, moneySnapshot, newKey, newOrg, PANEL, startApi, type Api, type TestOrg } from './helpers';

const ENDPOINTS: readonly [string, string][] = [
  ['POST', '/v1/chat/completions'],
  ['POST', '/v1/estimate'],
  ['GET', '/v1/models'],
  ['GET', '/v1/receipts/req_1'],
];

/** Values of every JSON type, plus the near-miss ones validators get wrong. */
const anyValue = fc.oneof(fc.jsonValue(), fc.constantFrom(true, false, 0, -1, 1e308, '', 'plus', 'QRM:PANL', 'quorum-panel', null));
const message = fc.oneof(
  fc.record(
    { role: fc.constantFrom('system', 'user', 'assistant', 'robot', ''), content: fc.oneof(fc.string(), anyValue) },
    { requiredKeys: [] },
  ),
  anyValue,
);
const body = fc.oneof(
  fc
    .record(
      {
        model: fc.oneof(fc.constantFrom(PANEL.A, PANEL.B, EXPRESS.A, EXPRESS.B, 'QRM:PANL:LAB'), anyValue),
        messages: fc.oneof(fc.array(message, { maxLength: 4 }), anyValue),
        stream: anyValue,
        tier: fc.oneof(fc.constantFrom('experience', 'plus', 'pro'), anyValue),
        svc: fc.oneof(fc.record({ max_cost_usd: anyValue }, { requiredKeys: [] }), anyValue),
        extra: anyValue,
      },
      { requiredKeys: [] },
    )
    .map((v) => JSON.stringify(v)),
  fc.jsonValue().map((v) => JSON.stringify(v)),
  fc.string(),
  fc.constantFrom('{', '{"model":', '\u0000', '[]', 'null', '{"messages":[{"role":"user","content":"\\ud800"}]}'),
);
const token = fc.stringMatching(/^[\x21-\x7e]{0,40}$/);
const headers = fc.record(
  {
    'idempotency-key': token,
    'content-type': fc.constantFrom(
      'application/json',
      'text/plain',
      'application/x-www-form-urlencoded',
      'application/json; charset=latin1',
    ),
    'content-encoding': fc.constantFrom('gzip', 'identity', 'br'),
    accept: token,
    'x-forwarded-for': token,
  },
  { requiredKeys: [] },
);

describe('property: malformed requests never 5xx and never move money', function () {
  this.timeout(300_000);
  const apis: Api[] = [];
  let org: TestOrg;
  let key: string;

  before(async () => {
    for (const form of FORMS) apis.push(await startApi(form));
    org = await newOrg();
    // An input limit below any prompt's framing stops every well-formed body at 413, so nothing ever runs.
    key = await newKey(org.orgId, { limits: { requestsPerMinute: 1_000_000, maxInputTokens: 1 } });
  });
  after(async () => {
    for (const api of apis) await api.close();
  });

  it('random bodies, headers, keys and paths on every endpoint', async () => {
    const before = await moneySnapshot(org.orgId);
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...apis),
        fc.constantFrom(...ENDPOINTS),
        body,
        headers,
        fc.constantFrom<'valid' | 'none' | 'junk'>('valid', 'valid', 'valid', 'none', 'junk'),
        fc.constantFrom('', '/', '?include_transcript=maybe', '?include_transcript=true', 'x/y'),
        async (api, [method, path], raw, extra, keyKind, suffix) => {
          const reply = await call(api, method, path + (method === 'GET' ? suffix : ''), {
            key: keyKind === 'valid' ? key : keyKind === 'junk' ? 'qrm_live_junk' : undefined,
            raw: method === 'POST' ? raw : undefined,
            headers: extra,
          });
          assert.ok(reply.status < 500, `${method} ${path} → ${reply.status} ${JSON.stringify(reply.body)}`);
          if (reply.status >= 400) {
            assert.equal(typeof reply.body.error?.code, 'string');
            assert.equal(typeof reply.body.error?.type, 'string');
          }
        },
      ),
      { numRuns: 400 },
    );
    assert.equal(await moneySnapshot(org.orgId), before);
  });

  it("the bounded token count equals the tokenizer's on ordinary text", () => {
    const auth = { limits: { maxInputTokens: 1_000_000 } } as KeyPrincipal;
    const words = fc.array(
      fc.oneof(
        fc.constantFrom('the', 'quorum', ' ', '\n', '  ', 'naïve', '日本語', '42', '3.14', '—', "don't", '```js', 'https://x.io/a?b=c'),
        fc.string({ maxLength: 12 }),
      ),
      { maxLength: 60 },
    );
    fc.assert(
      fc.property(
        fc.array(fc.record({ role: fc.constantFrom('user', 'system'), content: words.map((w) => w.join(' ')) }), {
          minLength: 1,
          maxLength: 3,
        }),
        (messages) => {
          // Within the slice length the counts are exactly the tokenizer's.
          fc.pre(messages.every((m) => m.content.split(/\s/).every((w) => w.length <= 31)));
          assert.equal(checkInputTokens(auth, messages), countMessagesTokens(messages));
        },
      ),
      { numRuns: 300 },
    );
  });
});
