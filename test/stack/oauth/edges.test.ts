import assert from 'node:assert/strict';
import { testSecretBox } from '../../harness/settings';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { createDb } from '../../../db/knex';
import { createSecretBox, parseMasterKey } from '../../../infra/secret-box';
import { dataDir } from '../../../infra/paths';
import { call, EXPRESS, moneySnapshot, PANEL, newKey, startApi, USER, type Api } from '../api/helpers';
import { freePort } from '../../../infra/free-port';
import { startProductWorkers } from '../deliberation/helpers';
import { quorumCli } from '../../harness/cli';
import { limitedDb } from '../../harness/limited-db';
import { newPage, screenshot } from '../../harness/browser';
import { stack } from '../../harness/stack';
import { REGISTRATIONS_PER_HOUR } from '../../../api/oauth/server';
import { DesktopApp, newPerson, RedirectReceiver, signIn } from './helpers';

/**
 * The authorization server's edges (issue 15): its published metadata, the 401 challenge, PKCE required, a token good
 * on its own edge only, consent denied, a person who left the organisation, a token store that cannot be read (the
 * gate fails closed), and keys rotated with the CLI.
 */

const form = 'B';

interface TokenError {
  error: { code: string };
}

describe('connected apps: the authorization server and the access gate', function () {
  this.timeout(120_000);
  let api: Api;
  let workers: { stop(): Promise<void> };
  let receiver: RedirectReceiver;
  let redirectUrl: string;

  before(async () => {
    workers = await startProductWorkers();
    api = await startApi(form);
    receiver = new RedirectReceiver();
    redirectUrl = await receiver.start();
  });
  after(async () => {
    await receiver.close();
    await api.close();
    await workers.stop();
  });

  it('publishes the protected-resource metadata of /mcp and /v1 and the authorization-server metadata (RFC 9728, RFC 8414)', async () => {
    for (const edge of ['mcp', 'v1']) {
      const res = await fetch(`${api.url}/.well-known/oauth-protected-resource/${edge}`);
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), {
        resource: `${api.url}/${edge}`,
        authorization_servers: [`${api.url}/oauth`],
        scopes_supported: ['completions', 'estimate', 'models', 'receipts', 'tests', 'certify'],
        bearer_methods_supported: ['header'],
        resource_name: edge === 'mcp' ? 'Quorum MCP server' : 'Quorum API',
        resource_documentation: `${api.url}/openapi.json`,
      });
    }
    const res = await fetch(`${api.url}/.well-known/oauth-authorization-server/oauth`);
    assert.equal(res.status, 200);
    const meta = (await res.json()) as Record<string, unknown>;
    assert.equal(meta.issuer, `${api.url}/oauth`);
    for (const [name, url] of [
      ['authorization_endpoint', '/oauth/auth'],
      ['token_endpoint', '/oauth/token'],
      ['registration_endpoint', '/oauth/reg'],
      ['revocation_endpoint', '/oauth/token/revocation'],
    ])
      assert.equal(meta[name], `${api.url}${url}`, name);
    assert.deepEqual(meta.code_challenge_methods_supported, ['S256']);
    assert.deepEqual(meta.response_types_supported, ['code']);
    assert.deepEqual((meta.grant_types_supported as string[]).sort(), ['authorization_code', 'refresh_token']);
  });

  it('answers a 401 on /mcp and /v1 with the challenge that names the metadata; a refused token is invalid_oauth_token', async () => {
    for (const [edge, method, route] of [
      ['mcp', 'POST', '/mcp'],
      ['v1', 'GET', '/v1/models'],
    ]) {
      const bare = await call(api, method, route, { body: method === 'POST' ? {} : undefined });
      assert.equal(bare.status, 401);
      assert.equal(bare.body.error?.code, 'invalid_api_key', 'no credentials: the key is what is missing');
      assert.equal(
        bare.headers.get('www-authenticate'),
        `Bearer resource_metadata="${api.url}/.well-known/oauth-protected-resource/${edge}"`,
      );
      // Shaped as our access tokens are (64 URL-safe characters), but never issued: a token's refusal.
      const stranger = await call(api, method, route, { key: 'x'.repeat(64), body: method === 'POST' ? {} : undefined });
      assert.equal(stranger.status, 401);
      assert.equal(stranger.body.error?.code, 'invalid_oauth_token');
      assert.match(stranger.headers.get('www-authenticate') ?? '', /error="invalid_token"$/);
      // A provider's key pasted as the bearer is a key gone wrong, with advice that fits (issue 26 item 16).
      for (const pasted of [`sk-${'a'.repeat(48)}`, `sk-proj-${'b'.repeat(156)}`, `sk-ant-api03-${'c'.repeat(95)}`]) {
        const r = await call(api, method, route, { key: pasted, body: method === 'POST' ? {} : undefined });
        assert.equal(r.status, 401);
        assert.equal(r.body.error?.code, 'invalid_api_key', pasted.slice(0, 12));
        assert.match(String(r.body.error?.message), /neither a Quorum API key .* nor an access token/);
        assert.doesNotMatch(r.headers.get('www-authenticate') ?? '', /invalid_token/);
      }
      // A malformed key stays a key's error, never a token's.
      assert.equal(
        (await call(api, method, route, { key: 'qrm_live_short', body: method === 'POST' ? {} : undefined })).body.error?.code,
        'invalid_api_key',
      );
    }
  });

  it('requires PKCE of every authorization request', async () => {
    const reg = await fetch(`${api.url}/oauth/reg`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [redirectUrl], client_name: 'No PKCE', token_endpoint_auth_method: 'none' }),
    });
    assert.equal(reg.status, 201);
    const { client_id } = (await reg.json()) as { client_id: string };
    const query = new URLSearchParams({ response_type: 'code', client_id, redirect_uri: redirectUrl, scope: 'completions' });
    const res = await fetch(`${api.url}/oauth/auth?${query}`, { redirect: 'manual' });
    const location = new URL(res.headers.get('location') ?? '', api.url);
    assert.equal(location.origin + location.pathname, redirectUrl);
    assert.equal(location.searchParams.get('error'), 'invalid_request');
    assert.match(location.searchParams.get('error_description') ?? '', /PKCE/);
  });

  it('limits open registration per client address: 429 with Retry-After past the hourly allowance', async () => {
    // A documentation address of its own (the API trusts X-Forwarded-For, as behind a load balancer), so no other test shares its count.
    const address = `203.0.113.${1 + (Date.now() % 250)}`;
    const register = (): Promise<Response> =>
      fetch(`${api.url}/oauth/reg`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': address },
        body: JSON.stringify({ redirect_uris: [redirectUrl], token_endpoint_auth_method: 'none' }),
      });
    const statuses: number[] = [];
    for (let i = 0; i <= REGISTRATIONS_PER_HOUR; i++) statuses.push((await register()).status);
    assert.deepEqual(statuses, [...Array<number>(REGISTRATIONS_PER_HOUR).fill(201), 429]);
    const refused = await register();
    assert.equal(((await refused.json()) as TokenError).error.code, 'rate_limit_exceeded');
    assert.ok(Number(refused.headers.get('retry-after')) > 3000, 'about an hour');
  });

  it('a /v1 token deliberates through the OpenAI client on the plan, is refused on /mcp, and a tier above the plan is tier_not_permitted', async () => {
    const person = await newPerson();
    const before = await moneySnapshot(person.orgId);
    const app = new DesktopApp(redirectUrl, 'Spreadsheet add-in');
    await signIn(api, app, receiver, person.email, 'v1');
    const token = app.tokens()?.access_token;
    assert.ok(token);

    const openai = new OpenAI({ apiKey: token, baseURL: `${api.url}/v1`, maxRetries: 0 });
    const completion = await openai.chat.completions.create({ model: EXPRESS.B, messages: USER('Name one prime number.') });
    const requestId = (completion as unknown as { svc: { request_id: string } }).svc.request_id;
    const receipt = await call(api, 'GET', `/v1/receipts/${requestId}`, { key: token });
    assert.equal(receipt.status, 200);
    const paid = receipt.body.receipt as { payer: string; charges: { platform_fee_usd: number; mode_fee_usd: number; billed_usd: number } };
    assert.equal(paid.payer, 'plan');
    assert.deepEqual([paid.charges.platform_fee_usd, paid.charges.mode_fee_usd], [0, 0]);
    assert.equal(await moneySnapshot(person.orgId), before, 'the organisation’s prepaid balance and ledger are untouched');

    // The free plan seats the experience tier only; a panel at the default tier is above it.
    const denied = await call(api, 'POST', '/v1/chat/completions', { key: token, body: { model: PANEL.B, messages: USER('Hi') } });
    assert.equal(denied.status, 403);
    assert.equal(denied.body.error?.code, 'tier_not_permitted');

    // Issued for /v1 (its audience), the token is not good on /mcp.
    const elsewhere = await call(api, 'POST', '/mcp', { key: token, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });
    assert.equal(elsewhere.status, 401);
    assert.equal((elsewhere.body as unknown as TokenError).error.code, 'invalid_oauth_token');
  });

  it('a person who denies gets the app an access_denied and no token', async () => {
    const person = await newPerson();
    const app = new DesktopApp(redirectUrl, 'Unwanted');
    const answer = await signIn(api, app, receiver, person.email, 'mcp', 'Deny');
    assert.equal(answer.get('error'), 'access_denied');
    assert.equal(answer.get('code'), null);
    assert.equal(app.tokens(), undefined);
  });

  it('a token stops working when its person leaves the organisation', async () => {
    const person = await newPerson();
    const app = new DesktopApp(redirectUrl);
    await signIn(api, app, receiver, person.email, 'v1');
    const token = app.tokens()?.access_token ?? '';
    assert.equal((await call(api, 'GET', '/v1/models', { key: token })).status, 200);
    await stack().db('memberships').where({ person_id: person.personId, org_id: person.orgId }).delete();
    const refused = await call(api, 'GET', '/v1/models', { key: token });
    assert.equal(refused.status, 401);
    assert.equal(refused.body.error?.code, 'invalid_oauth_token');
  });

  it('lists the apps a person allowed on the console, and revoking one ends its tokens at once', async () => {
    const person = await newPerson();
    const app = new DesktopApp(redirectUrl, 'Notebook Helper');
    const page = await newPage();
    await signIn(api, app, receiver, person.email, 'v1', 'Allow', page);
    const tokens = app.tokens();
    assert.ok(tokens?.access_token && tokens.refresh_token);
    assert.equal((await call(api, 'GET', '/v1/models', { key: tokens.access_token })).status, 200);

    await page.goto(`${api.url}/console/apps`);
    const row = page.getByRole('row', { name: /Notebook Helper/ });
    assert.match((await row.textContent()) ?? '', /\/v1: completions, estimate, models, receipts, tests, certify/);
    await screenshot(page, 'oauth/connected-apps');
    await page.getByRole('button', { name: 'Revoke Notebook Helper' }).click();
    await page.waitForURL(/\/console\/apps\?revoked=1$/);
    assert.equal(await page.getByRole('row', { name: /Notebook Helper/ }).count(), 0);

    const refused = await call(api, 'GET', '/v1/models', { key: tokens.access_token });
    assert.equal(refused.body.error?.code, 'invalid_oauth_token');
    const refresh = await fetch(`${api.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token,
        client_id: app.clientInformation()?.client_id ?? '',
      }),
    });
    assert.equal(((await refresh.json()) as { error: string }).error, 'invalid_grant', 'the refresh token went with the grant');
  });

  it('fails closed when the token store cannot be read: oauth_unavailable on /mcp, service_unavailable on /v1; keys still work', async () => {
    const person = await newPerson();
    const app = new DesktopApp(redirectUrl);
    await signIn(api, app, receiver, person.email, 'mcp');
    const token = app.tokens()?.access_token ?? '';
    const db = await limitedDb('quorum_no_oauth', 'revoke select on oauth_records from ROLE');
    const blind = await startApi(form, { db });
    try {
      const mcp = await call(blind, 'POST', '/mcp', { key: token, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });
      assert.equal(mcp.status, 503);
      assert.equal(mcp.body.error?.code, 'oauth_unavailable');
      assert.ok(Number(mcp.headers.get('retry-after')) > 0);
      const v1 = await call(blind, 'GET', '/v1/models', { key: token });
      assert.equal(v1.status, 503);
      assert.equal(v1.body.error?.code, 'service_unavailable');
      const key = await newKey(person.orgId);
      assert.equal((await call(blind, 'GET', '/v1/models', { key })).status, 200);
    } finally {
      await blind.close();
      await db.destroy();
    }
  });

  it('fails closed when the access check cannot reach Postgres: gate_check_failed on /mcp, service_unavailable on /v1', async () => {
    const dead = createDb(`postgres://nobody:x@127.0.0.1:${await freePort()}/none`, 1);
    const cut = await startApi(form, { db: dead });
    try {
      const key = await newKey((await newPerson()).orgId);
      const mcp = await call(cut, 'POST', '/mcp', { key, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });
      assert.equal(mcp.status, 503);
      assert.equal(mcp.body.error?.code, 'gate_check_failed');
      assert.ok(Number(mcp.headers.get('retry-after')) > 0);
      const v1 = await call(cut, 'GET', '/v1/models', { key });
      assert.equal(v1.status, 503);
      assert.equal(v1.body.error?.code, 'service_unavailable');
    } finally {
      await cut.close();
      await dead.destroy();
    }
  });

  it('rotates its keys with the CLI: a new key signs from the next start, the previous still verifies', async () => {
    const jwks = async (server: Api): Promise<string[]> =>
      ((await (await fetch(`${server.url}/oauth/jwks`)).json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid);
    const before = await jwks(api);
    assert.ok(before.length >= 1);
    const out = await quorumCli(['oauth', 'rotate-keys', '--json'], fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-oauth-')), {
      QUORUM_SECRET_KEY: masterKeyOfThisProcess(),
    });
    assert.equal(out.code, 0, out.stderr);
    const rotated = JSON.parse(out.stdout) as { signing_key: string };
    const restarted = await startApi(form);
    try {
      const after = await jwks(restarted);
      assert.equal(after[0], rotated.signing_key, 'the new key leads');
      assert.ok(after.includes(before[0]), 'the previous key is still published');
    } finally {
      await restarted.close();
    }
  });
});

/** The master key this test process seals with (set in the environment, or the development key file): the CLI must use it too. */
function masterKeyOfThisProcess(): string {
  const probe = testSecretBox().seal('probe', 'probe');
  const keyFile = path.join(dataDir, 'secret.key');
  const candidates = [process.env.QUORUM_SECRET_KEY, fs.existsSync(keyFile) ? fs.readFileSync(keyFile, 'utf8') : undefined];
  const key = candidates.find((k) => {
    if (!k) return false;
    try {
      return createSecretBox(parseMasterKey(k)).open(probe, 'probe') === 'probe';
    } catch {
      return false;
    }
  });
  if (!key) throw new Error('cannot tell which master key this process uses');
  return key.trim();
}
