import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { getProviderCredential, setBedrockRole, setProviderKey } from '../../../db/repositories/provider-credentials';
import { createOrganisation } from '../../../db/repositories/organisations';
import { randomBase62 } from '../../../domain/api-keys';
import { QuorumError } from '../../../domain/errors';
import { createLogger } from '../../../infra/log';
import { createSecretBox, loadSecretBox, parseMasterKey } from '../../../infra/secret-box';
import { stack } from '../../harness/stack';
import { dumpDatabase, encodingsOf } from './fixtures/helpers';

const isCode = (code: string) => (err: unknown) => err instanceof QuorumError && err.code === code;

describe('accounts: bring-your-own provider keys', () => {
  // The repositories seal with the box they are handed: one of this suite's own, so no environment's key matters.
  const box = createSecretBox(randomBytes(32));

  it('the master key is 32 bytes as hex or base64; production refuses to run without one', () => {
    const key = randomBytes(32);
    assert.deepEqual(parseMasterKey(key.toString('hex')), key);
    assert.deepEqual(parseMasterKey(key.toString('base64')), key);
    assert.deepEqual(parseMasterKey(key.toString('base64url')), key);
    for (const bad of ['', 'short', randomBytes(16).toString('hex'), randomBytes(31).toString('base64')])
      assert.throws(() => parseMasterKey(bad), /QUORUM_SECRET_KEY/);
    assert.throws(() => loadSecretBox({ QUORUM_ENV: 'production', QUORUM_SECRET_KEY: undefined }), /required when QUORUM_ENV=production/);
  });

  it('sealed keys open only with the same master key and for the same row', () => {
    const box = createSecretBox(randomBytes(32));
    const sealed = box.seal('sk-secret-value-123', 'org_a:openai');
    assert.equal(box.open(sealed, 'org_a:openai'), 'sk-secret-value-123');
    assert.throws(() => box.open(sealed, 'org_b:openai'), /does not open/);
    assert.throws(() => createSecretBox(randomBytes(32)).open(sealed, 'org_a:openai'), /does not open/);
  });

  it('a provider key is stored encrypted: never in clear in the database or in a log line', async () => {
    const { db } = stack();
    const { orgId } = await createOrganisation(db, { name: 'BYOK Co' });
    const providerKey = `sk-proj-${randomBase62(40)}`;
    await setProviderKey(db, box, { orgId, family: 'openai', apiKey: providerKey });
    const googleKey = `google-${randomBase62(30)}`;
    await setProviderKey(db, box, { orgId, family: 'google', apiKey: googleKey });

    const dump = await dumpDatabase(db);
    for (const secret of [providerKey, googleKey])
      for (const form of encodingsOf(secret)) assert.ok(!dump.includes(form), 'provider key found in the database dump');
    assert.deepEqual(await getProviderCredential(db, box, orgId, 'openai'), { kind: 'api_key', apiKey: providerKey });

    const lines: string[] = [];
    const log = createLogger('test', (line) => lines.push(line));
    const credential = await getProviderCredential(db, box, orgId, 'google');
    log.info('calling provider', { credential });
    log.error('provider refused', { err: new Error(`401 for key ${googleKey}`) });
    assert.equal(lines.length, 2);
    for (const line of lines) for (const secret of [providerKey, googleKey]) assert.ok(!line.includes(secret), line);
  });

  it('Bedrock stores a role ARN and external id, nothing secret; bad input is refused', async () => {
    const { db } = stack();
    const { orgId } = await createOrganisation(db, { name: 'Bedrock Co' });
    assert.equal(await getProviderCredential(db, box, orgId, 'bedrock'), undefined);
    const roleArn = 'arn:aws:iam::123456789012:role/QuorumSeats';
    await setBedrockRole(db, { orgId, roleArn, externalId: 'quorum-ext-1' });
    assert.deepEqual(await getProviderCredential(db, box, orgId, 'bedrock'), { kind: 'bedrock_role', roleArn, externalId: 'quorum-ext-1' });
    await assert.rejects(setBedrockRole(db, { orgId, roleArn: 'arn:aws:s3:::bucket', externalId: 'x1' }), isCode('invalid_request'));
    await assert.rejects(setProviderKey(db, box, { orgId, family: 'mistral' as never, apiKey: 'sk-12345678' }), isCode('invalid_request'));
    await assert.rejects(setProviderKey(db, box, { orgId, family: 'openai', apiKey: 'short' }), isCode('invalid_request'));
    await assert.rejects(setProviderKey(db, box, { orgId: 'org_missing', family: 'openai', apiKey: 'sk-123456789' }), isCode('not_found'));
  });
});
