import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startApi, type Api } from '../api/helpers';
import { Visitor } from '../console/helpers';
import { newPage, screenshot } from '../../harness/browser';
import { stack } from '../../harness/stack';
import { DesktopApp, mcpTransport, PASSWORD, RedirectReceiver } from './helpers';

/**
 * Issue 26 item 17: a new person connects an app in one go. The app sends them to the authorization URL; the console
 * asks them to sign in; they have no account, so they follow "Create an account", sign up, and land on the consent
 * page of that same authorization request, whose answer sends the app its code. The request rides through sign-up as
 * `next`, a path inside the console only (never an open redirect).
 */

describe('connected apps: a new person signs up in the middle of an app sign-in', function () {
  this.timeout(120_000);
  let api: Api;
  let receiver: RedirectReceiver;

  before(async () => {
    api = await startApi('B');
    receiver = new RedirectReceiver();
  });
  after(async () => {
    await receiver.close();
    await api.close();
  });

  it('goes from the app’s authorization URL through Sign up to consent, and the app receives its code', async () => {
    const app = new DesktopApp(await receiver.start(), 'Sign-up Desk');
    const serverUrl = `${api.url}/mcp`;
    assert.equal(await auth(app, { serverUrl }), 'REDIRECT');
    const authorization = app.pendingAuthorization;
    assert.ok(authorization, 'the SDK sent the person to sign in');
    assert.equal(authorization.pathname, '/oauth/auth');
    const redirected = receiver.next();

    const page = await newPage();
    await page.goto(authorization.href);
    assert.equal(new URL(page.url()).pathname, '/console/sign-in', 'a browser without a session is asked to sign in');
    // The header's "Sign up", as the person in the issue clicked (the form's "Create an account" carries it too).
    await page.getByRole('link', { name: 'Sign up', exact: true }).click();
    await page.waitForURL(/\/console\/sign-up/);
    const email = `new-${randomUUID().slice(0, 8)}@example.com`;
    const orgName = `Newcomer ${randomUUID().slice(0, 4)}`;
    await page.getByLabel('Your name').fill('Grace');
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByLabel('Organisation').fill(orgName);
    await screenshot(page, 'oauth/sign-up-from-app');
    await page.getByRole('button', { name: 'Create account' }).click();

    // Straight to the consent page of the same request, as the new person, in the organisation they just made.
    await page.waitForURL(/\/console\/authorize\//);
    assert.match(await page.locator('main').innerText(), new RegExp(`Sign-up Desk wants to act for you, ${email}`));
    assert.equal(await page.locator('select[name="org_id"] option:checked').innerText(), orgName);
    await page.getByRole('button', { name: 'Allow' }).click();

    const params = await redirected;
    const code = params.get('code');
    assert.ok(code, `the app receives its code: ${params.toString()}`);
    assert.equal(await auth(app, { serverUrl, authorizationCode: code }), 'AUTHORIZED');
    const client = new Client({ name: app.name, version: '1.0.0' });
    await client.connect(mcpTransport(api, app));
    try {
      const tools = await client.listTools();
      assert.ok(
        tools.tools.some((t) => t.name === 'deliberate'),
        'the app acts for the new person',
      );
    } finally {
      await client.close();
    }
    const person = (await stack().db('people').whereRaw('lower(email) = ?', [email]).first('id')) as { id: string } | undefined;
    assert.ok(person, 'the account was created');
  });

  it('carries `next` through sign-up only as a path inside the console', async () => {
    const visitor = new Visitor(api);
    const authorizePath = '/console/authorize/abc123';
    const signIn = await visitor.get(`/console/sign-in?next=${encodeURIComponent(authorizePath)}`);
    const toSignUp = `href="/console/sign-up?next=${encodeURIComponent(authorizePath)}"`;
    assert.equal(signIn.body.split(toSignUp).length - 1, 2, 'both sign-up links of the sign-in page (header and form) carry it');
    const signUp = await visitor.get(`/console/sign-up?next=${encodeURIComponent(authorizePath)}`);
    assert.ok(signUp.body.includes(`name="next" value="${authorizePath}"`), 'the sign-up form carries it');
    const toSignIn = `href="/console/sign-in?next=${encodeURIComponent(authorizePath)}"`;
    assert.equal(signUp.body.split(toSignIn).length - 1, 2, 'and both its sign-in links');
    // A `next` outside the console is carried into no link and no form.
    const offsite = await visitor.get(`/console/sign-up?next=${encodeURIComponent('https://evil.example/console')}`);
    assert.ok(!offsite.body.includes('evil.example') && !offsite.body.includes('?next='), 'nothing carries it');

    const signUpWith = async (next: string): Promise<string | null> => {
      const v = new Visitor(api);
      await v.get(`/console/sign-up?next=${encodeURIComponent(next)}`);
      const posted = await v.post('/console/sign-up', {
        name: 'Mallory',
        email: `m-${randomUUID().slice(0, 8)}@example.com`,
        password: PASSWORD,
        org: 'Mallory Co',
        next,
      });
      assert.equal(posted.status, 302, posted.body);
      return posted.location;
    };
    assert.equal(await signUpWith(authorizePath), authorizePath);
    for (const elsewhere of [
      'https://evil.example/console/x',
      '//evil.example/console',
      '/\\evil.example',
      '/consolex',
      'javascript:alert(1)',
    ])
      assert.equal(await signUpWith(elsewhere), '/console/keys?welcome=1', elsewhere);
  });
});
