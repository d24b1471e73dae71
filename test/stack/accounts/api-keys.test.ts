import assert from 'node:assert/strict';
import { authenticate, createApiKey, revokeApiKey } from '../../../db/repositories/api-keys';
import { createOrganisation, setOrganisationStatus } from '../../../db/repositories/organisations';
import { generateApiKey, hashApiKey, keyAllowsMode, parseApiKeyKind, SCOPES } from '../../../domain/api-keys';
import { QuorumError } from '../../../domain/errors';
import { stack } from '../../harness/stack';
import { dumpDatabase } from './fixtures/helpers';

const isCode = (code: string) => (err: unknown) => err instanceof QuorumError && err.code === code;

describe('accounts: API keys', () => {
  it('have the qrm_live_/qrm_test_ + 32 base62 shape', () => {
    for (const mode of ['live', 'test'] as const) {
      const key = generateApiKey(mode);
      assert.match(key, new RegExp(`^qrm_${mode}_[A-Za-z0-9]{32}$`));
      assert.equal(parseApiKeyKind(key), mode);
    }
    assert.equal(parseApiKeyKind('qrm_live_short'), undefined);
    assert.equal(new Set(Array.from({ length: 200 }, () => generateApiKey('live'))).size, 200);
  });

  it('the owner key works, only by its hash: the database never holds the raw key', async () => {
    const { db } = stack();
    const org = await createOrganisation(db, { name: 'Hash Co' });
    const { catalogueRevision, ...ctx } = await authenticate(db, org.apiKey);
    // With the key, the mode catalogue's revision as of the same statement.
    const catalogue = (await db('mode_catalogue').first('revision')) as { revision: string };
    assert.equal(catalogueRevision, BigInt(catalogue.revision));
    assert.deepEqual(ctx, {
      keyId: org.keyId,
      orgId: org.orgId,
      keyKind: 'live',
      scopes: [...SCOPES],
      allowedModes: null,
      limits: { requestsPerMinute: null, concurrency: null, maxInputTokens: null, maxCostMicros: null },
      isOwner: true,
    });
    const row = await db('api_keys').where({ id: org.keyId }).first();
    assert.equal(row.key_hash, hashApiKey(org.apiKey));
    assert.ok(!(await dumpDatabase(db)).includes(org.apiKey.slice(9)), 'raw key secret found in the database');
    // The hash itself is not a credential, nor is a near miss.
    await assert.rejects(authenticate(db, row.key_hash), isCode('invalid_api_key'));
    await assert.rejects(authenticate(db, org.apiKey.slice(0, -1) + (org.apiKey.endsWith('A') ? 'B' : 'A')), isCode('invalid_api_key'));
    await assert.rejects(authenticate(db, ''), isCode('invalid_api_key'));
  });

  it('a revoked or expired key gets revoked_api_key', async () => {
    const { db } = stack();
    const { orgId } = await createOrganisation(db, { name: 'Revoke Co' });
    const revoked = await createApiKey(db, { orgId, keyKind: 'live' });
    await authenticate(db, revoked.apiKey);
    await revokeApiKey(db, revoked.keyId);
    await revokeApiKey(db, revoked.keyId);
    await assert.rejects(authenticate(db, revoked.apiKey), isCode('revoked_api_key'));
    const expired = await createApiKey(db, { orgId, keyKind: 'live', expiresAt: new Date(Date.now() - 1000) });
    await assert.rejects(authenticate(db, expired.apiKey), isCode('revoked_api_key'));
    const future = await createApiKey(db, { orgId, keyKind: 'live', expiresAt: new Date(Date.now() + 60_000) });
    assert.equal((await authenticate(db, future.apiKey)).orgId, orgId);
    await assert.rejects(revokeApiKey(db, 'key_missing'), isCode('not_found'));
  });

  it('a suspended organisation gets org_suspended, and resumes', async () => {
    const { db } = stack();
    const org = await createOrganisation(db, { name: 'Suspend Co' });
    await setOrganisationStatus(db, org.orgId, 'suspended');
    await assert.rejects(authenticate(db, org.apiKey), isCode('org_suspended'));
    await setOrganisationStatus(db, org.orgId, 'active');
    assert.equal((await authenticate(db, org.apiKey)).orgId, org.orgId);
    await assert.rejects(setOrganisationStatus(db, 'org_missing', 'active'), isCode('not_found'));
  });

  it('a key limited to modes reports them and allows no others; a test key is flagged test', async () => {
    const { db } = stack();
    const { orgId } = await createOrganisation(db, { name: 'Modes Co' });
    const limited = await createApiKey(db, {
      orgId,
      keyKind: 'test',
      scopes: ['completions', 'estimate'],
      allowedModes: ['quorum-fast', 'quorum-deep'],
      limits: { requestsPerMinute: 600, concurrency: 20, maxInputTokens: 32_000, maxCostMicros: 10_000_000n },
    });
    assert.match(limited.apiKey, /^qrm_test_/);
    const ctx = await authenticate(db, limited.apiKey);
    assert.equal(ctx.keyKind, 'test');
    assert.equal(ctx.isOwner, false);
    assert.deepEqual(ctx.scopes, ['completions', 'estimate']);
    assert.deepEqual(ctx.allowedModes, ['quorum-fast', 'quorum-deep']);
    assert.deepEqual(ctx.limits, { requestsPerMinute: 600, concurrency: 20, maxInputTokens: 32_000, maxCostMicros: 10_000_000n });
    assert.equal(keyAllowsMode(ctx.allowedModes, 'quorum-fast'), true);
    assert.equal(keyAllowsMode(ctx.allowedModes, 'quorum-other'), false);
    assert.equal(keyAllowsMode(null, 'quorum-other'), true);
  });

  it('refuses unknown scopes, empty mode lists, bad limits and unknown organisations', async () => {
    const { db } = stack();
    const { orgId } = await createOrganisation(db, { name: 'Invalid Co' });
    await assert.rejects(createApiKey(db, { orgId, keyKind: 'live', scopes: ['admin' as never] }), isCode('invalid_request'));
    await assert.rejects(createApiKey(db, { orgId, keyKind: 'live', allowedModes: [] }), isCode('invalid_request'));
    await assert.rejects(createApiKey(db, { orgId, keyKind: 'live', limits: { concurrency: 0 } }), isCode('invalid_request'));
    await assert.rejects(createApiKey(db, { orgId: 'org_missing', keyKind: 'live' }), isCode('not_found'));
  });
});
