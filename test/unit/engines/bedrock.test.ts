import assert from 'node:assert/strict';
import { createEngines, type Credential, type Engines } from '../../../engines';
import { engineCostMicros } from '../../../domain/pricing';
import {
  AWS_TEST_CREDENTIALS,
  bedrockError,
  bedrockReply,
  converseModelId,
  header,
  startBedrockLoopback,
  startStsLoopback,
  stsAssumeRoleReply,
  stsError,
  stsParams,
  type Loopback,
  type RecordedRequest,
  type Script,
} from '../../fixtures/providers';
import { captureLogger, engineFailure, MESSAGES } from './helpers';
import { settingsOf } from '../../harness/settings';

const ENGINE = 'bedrock/meta.llama3-3-70b-instruct';
const REGION = 'us-east-1';
const SERVICE = { ...AWS_TEST_CREDENTIALS, region: REGION };

function serviceEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  return { AWS_REGION: REGION, AWS_ACCESS_KEY_ID: SERVICE.accessKeyId, AWS_SECRET_ACCESS_KEY: SERVICE.secretAccessKey, ...extra };
}

describe('engines: bedrock adapter (Converse via the AWS SDK) against a loopback endpoint', () => {
  const servers: Loopback[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });

  async function withService(script: Script): Promise<{ engines: Engines; bedrock: Loopback }> {
    const bedrock = await startBedrockLoopback(script, SERVICE);
    servers.push(bedrock);
    return {
      engines: createEngines({ ...settingsOf(serviceEnv({ QUORUM_BEDROCK_ENDPOINT: bedrock.baseUrl })), logger: captureLogger().logger }),
      bedrock,
    };
  }
  const call = (e: Engines, extra: { timeoutMs?: number } = {}, credential?: Credential): ReturnType<Engines['call']> =>
    e.call({ engineId: ENGINE, messages: MESSAGES, maxOutputTokens: 100, temperature: 0.2, ...extra }, credential);

  it('signs Converse with SigV4 and maps text, tokens and cost', async () => {
    const { engines: e, bedrock } = await withService(bedrockReply({ text: 'Paris.', inputTokens: 30, outputTokens: 4 }));
    assert.equal(e.isAvailable(ENGINE), true);
    const result = await call(e);
    assert.deepEqual(bedrock.rejected, []);
    const req = bedrock.requests[0] as RecordedRequest;
    assert.equal(req.method, 'POST');
    assert.equal(converseModelId(req), 'us.meta.llama3-3-70b-instruct-v1:0');
    assert.match(
      header(req, 'authorization') ?? '',
      new RegExp(`^AWS4-HMAC-SHA256 Credential=${SERVICE.accessKeyId}/\\d{8}/${REGION}/bedrock/aws4_request, `),
    );
    assert.deepEqual(req.body, {
      messages: [{ role: 'user', content: [{ text: 'What is the capital of France?' }] }],
      system: [{ text: 'You are a careful assistant.' }],
      inferenceConfig: { maxTokens: 100, temperature: 0.2 },
    });
    assert.equal(result.text, 'Paris.');
    assert.equal(result.finish, 'stop');
    assert.equal(result.tokensIn, 30);
    assert.equal(result.tokensOut, 4);
    assert.equal(result.costMicros, engineCostMicros(30, 4, e.spec(ENGINE)));
    assert.equal(result.source, 'service');
  });

  it('the loopback recomputes the signature: a wrong secret key is refused', async () => {
    const bedrock = await startBedrockLoopback(bedrockReply(), SERVICE);
    servers.push(bedrock);
    const env = serviceEnv({
      QUORUM_BEDROCK_ENDPOINT: bedrock.baseUrl,
      AWS_SECRET_ACCESS_KEY: 'notTheRightSecretKeyAtAll0000000000000000',
    });
    const err = await engineFailure(call(createEngines({ ...settingsOf(env), logger: captureLogger().logger })));
    assert.equal(err.kind, 'auth');
    assert.deepEqual(
      bedrock.rejected.map((r) => r.reason),
      ['signature does not match'],
    );
  });

  it('stopReason max_tokens is length', async () => {
    const { engines: e } = await withService(bedrockReply({ text: 'Pa', stopReason: 'max_tokens', outputTokens: 100 }));
    assert.equal((await call(e)).finish, 'length');
  });

  it('classifies throttling, server errors, access denied, unknown models and validation', async () => {
    const { engines: e } = await withService([
      bedrockError(429, 'ThrottlingException', 'Too many requests, please wait before trying again.', { 'retry-after': '3' }),
      bedrockError(500, 'InternalServerException', 'Internal server error'),
      bedrockError(403, 'AccessDeniedException', "You don't have access to the model with the specified model ID."),
      bedrockError(404, 'ResourceNotFoundException', 'Could not resolve the foundation model.'),
      bedrockError(400, 'ValidationException', 'The provided request is not valid'),
    ]);
    const throttled = await engineFailure(call(e));
    assert.deepEqual([throttled.kind, throttled.retryable, throttled.retryAfterMs], ['rate_limited', true, 3000]);
    assert.match(throttled.message, /Too many requests/);
    const server = await engineFailure(call(e));
    assert.deepEqual([server.kind, server.retryable], ['server', true]);
    const denied = await engineFailure(call(e));
    assert.deepEqual([denied.kind, denied.retryable], ['auth', false]);
    const missing = await engineFailure(call(e));
    assert.deepEqual([missing.kind, missing.retryable], ['unknown_model', false]);
    const invalid = await engineFailure(call(e));
    assert.deepEqual([invalid.kind, invalid.retryable], ['bad_request', false]);
  });

  it('a malformed Converse body is permanent', async () => {
    const { engines: e } = await withService([{ text: 'not json at all' }, { json: { output: {} } }]);
    for (let i = 0; i < 2; i += 1) {
      const err = await engineFailure(call(e));
      assert.equal(err.kind, 'malformed');
      assert.equal(err.retryable, false);
    }
  });

  it('times out retryably, and a reset connection is retryable', async () => {
    const { engines: e } = await withService([{ ...bedrockReply(), delayMs: 2000 }, { hangUp: true }]);
    const slow = await engineFailure(call(e, { timeoutMs: 150 }));
    assert.deepEqual([slow.kind, slow.retryable], ['timeout', true]);
    const reset = await engineFailure(call(e));
    assert.deepEqual([reset.kind, reset.retryable], ['connection', true]);
  });

  it('is unavailable without AWS_REGION and credentials', () => {
    assert.equal(createEngines({ ...settingsOf({ AWS_ACCESS_KEY_ID: 'x', AWS_SECRET_ACCESS_KEY: 'y' }) }).isAvailable(ENGINE), false);
    assert.equal(createEngines({ ...settingsOf({ AWS_REGION: REGION }) }).isAvailable(ENGINE), false);
    assert.equal(createEngines({ ...settingsOf(serviceEnv({})) }).isAvailable(ENGINE), true);
  });

  describe('an organisation role assumed with STS', () => {
    const ROLE: Credential = {
      kind: 'bedrock_role',
      roleArn: 'arn:aws:iam::210987654321:role/QuorumBedrock',
      externalId: 'qrm-ext-7d1c2b',
      region: 'us-west-2',
      source: 'own_key',
    };
    const ASSUMED = {
      accessKeyId: 'ASIAZLOOPBACKASSUMED',
      secretAccessKey: 'assumedSecretKey/0123456789abcdefghijklmnop',
      sessionToken: 'FwoGZXIvYXdzEloopbackSessionToken0123456789',
      expiration: new Date(Date.now() + 3600_000),
    };

    async function withRole(
      stsScript: Script,
      bedrockScript: Script,
    ): Promise<{ engines: Engines; sts: Loopback; bedrock: Loopback; lines: string[] }> {
      const sts = await startStsLoopback(stsScript, { ...SERVICE, region: 'us-west-2' });
      const bedrock = await startBedrockLoopback(bedrockScript, { ...ASSUMED, region: 'us-west-2' });
      servers.push(sts, bedrock);
      const { logger, lines } = captureLogger();
      const env = serviceEnv({ QUORUM_BEDROCK_ENDPOINT: bedrock.baseUrl, QUORUM_STS_ENDPOINT: sts.baseUrl });
      return { engines: createEngines({ ...settingsOf(env), logger }), sts, bedrock, lines };
    }

    it('assumes the role once, signs Converse with the temporary credentials, and reuses them', async () => {
      const { engines: e, sts, bedrock } = await withRole(stsAssumeRoleReply(ASSUMED), bedrockReply({ text: 'Paris.' }));
      assert.equal(e.isAvailable(ENGINE, ROLE), true);
      const first = await call(e, {}, ROLE);
      const second = await call(e, {}, ROLE);
      assert.equal(first.source, 'own_key');
      assert.equal(second.text, 'Paris.');
      assert.deepEqual(sts.rejected, []);
      assert.deepEqual(bedrock.rejected, []);
      assert.equal(sts.requests.length, 1, 'STS is called once; the second call uses the cached credentials');
      const params = stsParams(sts.requests[0] as RecordedRequest);
      assert.equal(params.get('Action'), 'AssumeRole');
      assert.equal(params.get('RoleArn'), 'arn:aws:iam::210987654321:role/QuorumBedrock');
      assert.equal(params.get('ExternalId'), 'qrm-ext-7d1c2b');
      assert.match(
        header(sts.requests[0] as RecordedRequest, 'authorization') ?? '',
        new RegExp(`Credential=${SERVICE.accessKeyId}/\\d{8}/us-west-2/sts/aws4_request`),
      );
      assert.equal(bedrock.requests.length, 2);
      for (const req of bedrock.requests) {
        assert.match(
          header(req, 'authorization') ?? '',
          new RegExp(`^AWS4-HMAC-SHA256 Credential=${ASSUMED.accessKeyId}/\\d{8}/us-west-2/bedrock/aws4_request`),
        );
        assert.equal(header(req, 'x-amz-security-token'), ASSUMED.sessionToken);
      }
    });

    it('concurrent calls share one AssumeRole', async () => {
      const { engines: e, sts } = await withRole({ ...stsAssumeRoleReply(ASSUMED), delayMs: 50 }, bedrockReply());
      await Promise.all([call(e, {}, ROLE), call(e, {}, ROLE), call(e, {}, ROLE)]);
      assert.equal(sts.requests.length, 1);
    });

    it('assumes again when the cached credentials are within five minutes of expiry', async () => {
      const soon = { ...ASSUMED, expiration: new Date(Date.now() + 4 * 60_000) };
      const { engines: e, sts } = await withRole(stsAssumeRoleReply(soon), bedrockReply());
      await call(e, {}, ROLE);
      await call(e, {}, ROLE);
      assert.equal(sts.requests.length, 2);
    });

    it('a refused AssumeRole is a permanent auth failure without the secrets', async () => {
      const {
        engines: e,
        bedrock,
        lines,
      } = await withRole(stsError(403, 'AccessDenied', 'User is not authorized to perform: sts:AssumeRole'), bedrockReply());
      const err = await engineFailure(call(e, {}, ROLE));
      assert.deepEqual([err.kind, err.retryable], ['auth', false]);
      assert.match(err.message, /not authorized to perform: sts:AssumeRole/);
      assert.equal(bedrock.requests.length, 0);
      const everything = [err.message, JSON.stringify(err), ...lines].join('\n');
      assert.ok(!everything.includes(SERVICE.secretAccessKey));
    });
  });
});
