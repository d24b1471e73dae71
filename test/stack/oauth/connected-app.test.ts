import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import assert from 'node:assert/strict';
import { EXPRESS, startApi, type Api } from '../api/helpers';
import { startProductWorkers } from '../deliberation/helpers';
import { newPage } from '../../harness/browser';
import '../../harness/stack';
import { json } from '../mcp/helpers';
import { connectFromNothing, DesktopApp, newPerson, RedirectReceiver } from './helpers';

/**
 * Issue 15's done-when: the official MCP SDK client with its OAuth client provider connects to `/mcp` from nothing —
 * discovers the metadata, registers dynamically, completes authorization code + PKCE while a person signs in and
 * consents in a real headless Chromium — calls `deliberate`, refreshes its token, and a revoked token is then refused
 * with 401 `invalid_oauth_token`.
 */

const QUESTION = [{ role: 'user' as const, content: 'In one sentence: why is the sky blue?' }];
/** Short-lived access tokens, so the SDK has to refresh within the test. */
const ACCESS_TTL_S = 3;

describe('connected apps: an MCP client signs in with OAuth 2.1 from nothing', function () {
  this.timeout(120_000);
  let api: Api;
  let workers: { stop(): Promise<void> };
  let receiver: RedirectReceiver;
  let client: Client | undefined;
  const logLines: string[] = [];

  before(async () => {
    workers = await startProductWorkers();
    api = await startApi('B', { env: { ...process.env, QUORUM_OAUTH_ACCESS_TTL_S: String(ACCESS_TTL_S) }, log: (l) => logLines.push(l) });
    receiver = new RedirectReceiver();
  });
  after(async () => {
    await client?.close();
    await receiver.close();
    await api.close();
    await workers.stop();
  });

  it('discovers, registers, signs in with PKCE, deliberates, refreshes, and is refused once revoked', async () => {
    const person = await newPerson();
    const app = new DesktopApp(await receiver.start());
    const page = await newPage();
    client = await connectFromNothing(api, app, receiver, person.email, page);

    // Registered dynamically as a public client; the tokens carry a rotating refresh token.
    const registered = app.clientInformation();
    assert.ok(registered?.client_id, 'dynamic registration gave a client id');
    const first = app.tokens();
    assert.ok(first?.access_token && first.refresh_token, 'an access token and a refresh token');
    assert.match(first.access_token, /^[A-Za-z0-9_-]{64}$/, 'access tokens have their own shape (domain/api-keys.ts ACCESS_TOKEN_BITS)');

    const result = await client.callTool({ name: 'deliberate', arguments: { model: EXPRESS.B, messages: QUESTION } });
    assert.notEqual(result.isError, true, JSON.stringify(result));
    const requestId = (json(result).svc as { request_id: string }).request_id;
    const receipt = json(await client.callTool({ name: 'get_receipt', arguments: { request_id: requestId } }));
    const paid = receipt.receipt as { payer: string; charges: { platform_fee_usd: number; mode_fee_usd: number; billed_usd: number } };
    assert.equal(paid.payer, 'plan', 'a connected app bills the person’s plan');
    assert.deepEqual([paid.charges.platform_fee_usd, paid.charges.mode_fee_usd], [0, 0], 'real engine cost only');
    assert.ok(paid.charges.billed_usd > 0);

    // The access token expires; the SDK's next call is refused, it refreshes (rotating the refresh token) and retries.
    await new Promise((r) => setTimeout(r, (ACCESS_TTL_S + 1) * 1000));
    const tools = await client.listTools();
    assert.ok(tools.tools.some((t) => t.name === 'deliberate'));
    const refreshed = app.tokens();
    assert.ok(refreshed?.access_token && refreshed.refresh_token);
    assert.notEqual(refreshed.access_token, first.access_token, 'a new access token');
    assert.notEqual(refreshed.refresh_token, first.refresh_token, 'the refresh token rotated');

    // The rotated-out refresh token is spent.
    const reuse = await fetch(`${api.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: first.refresh_token, client_id: registered.client_id }),
    });
    assert.equal(reuse.status, 400);
    assert.equal(((await reuse.json()) as { error: string }).error, 'invalid_grant');

    // Revoked (RFC 7009), the access token is refused at once, with the challenge that says where to sign in again.
    const revoke = await fetch(`${api.url}/oauth/token/revocation`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: refreshed.access_token, client_id: registered.client_id }),
    });
    assert.equal(revoke.status, 200);
    const refused = await fetch(`${api.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${refreshed.access_token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(refused.status, 401);
    assert.equal(((await refused.json()) as { error: { code: string } }).error.code, 'invalid_oauth_token');
    assert.equal(
      refused.headers.get('www-authenticate'),
      `Bearer resource_metadata="${api.url}/.well-known/oauth-protected-resource/mcp", error="invalid_token"`,
    );
    assert.ok(logLines.length > 0, 'the API logged the calls');
    for (const secret of [first.access_token, first.refresh_token, refreshed.access_token, refreshed.refresh_token])
      assert.ok(!logLines.some((l) => l.includes(secret)), 'no token in a log line');
  });
});
