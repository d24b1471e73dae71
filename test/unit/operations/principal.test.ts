import assert from 'node:assert/strict';
import { QuorumError } from '../../../domain/errors';
import { actorOf, orgActedOn, requireOwner, type KeyPrincipal, type Principal } from '../../../operations/principal';

/** The one principal's helpers: who the activity log names, which organisation is acted on, who counts as the owner. */

const key = (over: Partial<KeyPrincipal> = {}): KeyPrincipal => ({
  via: 'key',
  edge: 'mcp',
  ip: '203.0.113.7',
  keyId: 'key_1',
  orgId: 'org_key',
  keyKind: 'live',
  scopes: [],
  allowedModes: null,
  limits: { requestsPerMinute: null, concurrency: null, maxInputTokens: null, maxCostMicros: null },
  isOwner: false,
  ...over,
});
const person = (role: 'owner' | 'member' | null, orgId: string | null = 'org_person'): Principal => ({
  via: 'person',
  person: { id: 'person_1', email: 'p@example.test', name: 'P' },
  orgId,
  role,
  ip: '198.51.100.2',
});
const operator: Principal = { via: 'operator' };
const isCode =
  (code: string) =>
  (err: unknown): boolean =>
    err instanceof QuorumError && err.code === code;

describe('operations/principal', () => {
  it('actorOf names the key and its edge, the person at the console, or the operator at the CLI', () => {
    assert.deepEqual(actorOf(key()), { kind: 'key', id: 'key_1', edge: 'mcp', ip: '203.0.113.7' });
    assert.deepEqual(actorOf(key({ edge: 'api', ip: undefined })), { kind: 'key', id: 'key_1', edge: 'api', ip: null });
    assert.deepEqual(actorOf(person('member')), { kind: 'person', id: 'person_1', edge: 'console', ip: '198.51.100.2' });
    assert.deepEqual(actorOf(operator), { kind: 'operator', id: null, edge: 'cli', ip: null });
  });

  it("orgActedOn: a key's own organisation, a person's chosen one, the one the operator names", () => {
    assert.equal(orgActedOn(key(), 'org_other'), 'org_key');
    assert.equal(orgActedOn(person('member'), 'org_other'), 'org_person');
    assert.throws(() => orgActedOn(person(null, null)), isCode('forbidden'));
    assert.equal(orgActedOn(operator, 'org_named'), 'org_named');
    assert.throws(() => orgActedOn(operator), isCode('invalid_request'));
  });

  it("requireOwner lets the owner (or the owner's key) and the operator through, and no one else", () => {
    for (const p of [person('owner'), key({ isOwner: true }), operator]) assert.doesNotThrow(() => requireOwner(p, 'owners only'));
    for (const p of [person('member'), person(null, null), key()]) assert.throws(() => requireOwner(p, 'owners only'), isCode('forbidden'));
  });
});
