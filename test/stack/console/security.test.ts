import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { call, startApi, type Api } from '../api/helpers';
import { stack } from '../../harness/stack';
import { Visitor } from './helpers';

/** The console's security rules over HTTP: CSRF, the two edges kept apart, owner-only provider keys, sign-in limits, no secrets in logs. */

const PASSWORD = 'correct horse battery staple';
const email = (): string => `p-${randomUUID().slice(0, 8)}@example.com`;

describe('console: sessions, CSRF and the edges kept apart', function () {
  this.timeout(60_000);
  let api: Api;
  const logs: string[] = [];

  before(async () => {
    api = await startApi('B', { log: (line) => logs.push(line) });
  });
  after(() => api.close());

  it('signs up into a session cookie that is HttpOnly, SameSite=Lax and scoped to /console, rotated at sign-in', async () => {
    const v = new Visitor(api);
    const address = email();
    await v.get('/console/sign-up');
    const res = await v.post('/console/sign-up', { name: 'Ada', email: address, password: PASSWORD, org: 'Ada Labs' });
    assert.equal(res.status, 302);
    assert.equal(res.location, '/console/keys?welcome=1');
    const first = v.cookie('quorum_session');
    assert.ok(first);
    const overview = await v.get('/console/overview');
    assert.equal(overview.status, 200);
    assert.match(overview.body, /Ada Labs/);
    assert.match(overview.body, /\$5\.0000/, 'the trial credit');
    const stored = (await stack().db('people').whereRaw('lower(email) = ?', [address]).first('password_hash')) as { password_hash: string };
    assert.match(stored.password_hash, /^\$argon2id\$/);

    const again = new Visitor(api);
    const signedIn = await again.signIn(address, PASSWORD);
    assert.equal(signedIn.status, 302);
    const second = again.cookie('quorum_session');
    assert.ok(second && second !== first, 'each sign-in gets a new session');
    const raw = await fetch(`${api.url}/console/sign-in`);
    const setCookie = raw.headers.getSetCookie().join('\n');
    assert.match(setCookie, /quorum_csrf=[^;]+; path=\/console; samesite=lax; httponly/i);
  });

  it('refuses a cross-site form post without the CSRF token, and one from another Origin, changing nothing', async () => {
    const v = new Visitor(api);
    await v.signUp({ email: email(), password: PASSWORD });
    const keysBefore = await stack().db('api_keys').count<{ n: string }[]>('* as n');
    const forged = await v.post('/console/keys', { kind: 'live', scopes: 'completions' }, { csrf: false });
    assert.equal(forged.status, 403);
    assert.match(forged.body, /did not come from the console/);
    await v.get('/console/keys');
    const otherSite = await v.post(
      '/console/keys',
      { kind: 'live', scopes: 'completions' },
      { headers: { origin: 'https://evil.example' } },
    );
    assert.equal(otherSite.status, 403);
    assert.deepEqual(await stack().db('api_keys').count<{ n: string }[]>('* as n'), keysBefore);
    const ok = await v.post('/console/keys', { kind: 'test', scopes: ['completions', 'models'] });
    assert.equal(ok.status, 200);
    assert.match(ok.body, /qrm_test_[0-9A-Za-z]{32}/);
  });

  it('a session cookie is refused on /v1 and a bearer key on /console', async () => {
    const v = new Visitor(api);
    await v.signUp({ email: email(), password: PASSWORD });
    await v.get('/console/keys');
    const created = await v.post('/console/keys', { kind: 'live', scopes: ['models'] });
    const key = /qrm_live_[0-9A-Za-z]{32}/.exec(created.body)?.[0];
    assert.ok(key);
    const cookie = `quorum_session=${v.cookie('quorum_session')}`;
    const withCookie = await call(api, 'GET', '/v1/models', { headers: { cookie } });
    assert.equal(withCookie.status, 401);
    assert.equal(withCookie.body.error?.code, 'invalid_api_key');
    assert.equal((await call(api, 'GET', '/v1/models', { key })).status, 200, 'the key itself works on /v1');
    const bearer = await fetch(`${api.url}/console/overview`, { headers: { authorization: `Bearer ${key}` }, redirect: 'manual' });
    assert.equal(bearer.status, 401);
    assert.match(await bearer.text(), /takes a signed-in session, not an API key/);
  });

  it('only the owner sets provider keys; a member who joined by invitation is refused', async () => {
    const owner = new Visitor(api);
    await owner.signUp({ email: email(), password: PASSWORD, org: 'Owned Co' });
    await owner.get('/console/team');
    const memberEmail = email();
    const invited = await owner.post('/console/team/invite', { email: memberEmail });
    const link = /http:\/\/[^<"\s]+\/console\/invite\?token=[A-Za-z0-9_-]+/.exec(invited.body)?.[0];
    assert.ok(link, invited.body.slice(0, 3000));
    const member = new Visitor(api);
    await member.get(`/console/sign-up?invite=${new URL(link).searchParams.get('token')}`);
    const joined = await member.post('/console/sign-up', {
      name: 'Member',
      email: memberEmail,
      password: PASSWORD,
      invite: new URL(link).searchParams.get('token') as string,
    });
    assert.equal(joined.status, 302);
    await member.get(joined.location as string);
    assert.equal((await member.post('/console/invite', { token: new URL(link).searchParams.get('token') as string })).status, 302);
    assert.match((await member.get('/console/overview')).body, /Owned Co/);
    const page = await member.get('/console/provider-keys');
    assert.match(page.body, /Only the organisation's owner configures provider keys/);
    const refused = await member.post('/console/provider-keys', { family: 'openai', api_key: 'sk-member-should-not-store-1234567890' });
    assert.equal(refused.status, 403);
    const orgId = ((await stack().db('organisations').where({ name: 'Owned Co' }).first('id')) as { id: string }).id;
    assert.equal((await stack().db('provider_credentials').where({ org_id: orgId })).length, 0);
    await owner.get('/console/provider-keys');
    const set = await owner.post('/console/provider-keys', { family: 'openai', api_key: 'sk-owner-key-abcdefghijklmnop1234' });
    assert.equal(set.status, 302);
    const shown = await owner.get('/console/provider-keys');
    assert.match(shown.body, /configured/);
    assert.doesNotMatch(shown.body, /sk-owner-key/);
  });

  it('limits failed sign-ins per address with a clear message, and signs out everywhere', async () => {
    const address = email();
    const v = new Visitor(api);
    await v.signUp({ email: address, password: PASSWORD });
    const other = new Visitor(api);
    for (let i = 0; i < 5; i++) assert.equal((await other.signIn(address, `wrong password ${i}!`)).status, 401);
    const limited = await other.signIn(address, PASSWORD);
    assert.equal(limited.status, 429);
    assert.match(limited.body, /Too many failed sign-ins for this address\. Try again in \d+ minutes?\./);

    const second = new Visitor(api);
    await stack().db('sign_in_attempts').where({ email: address }).delete();
    assert.equal((await second.signIn(address, PASSWORD)).status, 302);
    await v.get('/console/overview');
    assert.equal((await v.post('/console/sign-out-everywhere', {})).status, 302);
    assert.equal((await second.get('/console/overview')).status, 302, 'the other session ended too');
  });

  it('never writes a password, a session token or an API key to the logs', () => {
    const all = logs.join('\n');
    assert.ok(logs.length > 10, 'the requests above were logged');
    assert.ok(!all.includes(PASSWORD));
    assert.doesNotMatch(all, /qrm_(live|test)_[0-9A-Za-z]{32}/);
    assert.doesNotMatch(all, /quorum_session=/);
    assert.doesNotMatch(all, /token=/);
  });
});
