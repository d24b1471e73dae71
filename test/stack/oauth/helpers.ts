import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { auth, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { hashPassword } from '../../../operations/passwords';
import { createPerson } from '../../../db/repositories/people';
import type { Api } from '../api/helpers';
import { newPage, screenshot } from '../../harness/browser';
import { stack } from '../../harness/stack';

/**
 * A connected app as MCP clients are: the official SDK's OAuth client provider (this class is the app's storage, as
 * a desktop assistant keeps it), a loopback redirect receiver, and a real headless Chromium in which a person signs
 * in to the console and consents.
 */
export class DesktopApp implements OAuthClientProvider {
  private info?: OAuthClientInformationMixed;
  private saved?: OAuthTokens;
  private verifier = '';
  /** Where the SDK sent the person to sign in, last time it needed to. */
  pendingAuthorization?: URL;

  constructor(
    readonly redirectUrl: string,
    readonly name = 'Test Desk',
  ) {}

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.name,
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed): void {
    this.info = info;
  }
  tokens(): OAuthTokens | undefined {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens): void {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL): void {
    this.pendingAuthorization = url;
  }
  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }
  codeVerifier(): string {
    return this.verifier;
  }
}

/** The app's redirect URI: a loopback listener that hands over each authorization response it receives. */
export class RedirectReceiver {
  private waiting: ((params: URLSearchParams) => void)[] = [];
  private server = http.createServer((req, res) => {
    const params = new URL(req.url ?? '/', 'http://127.0.0.1').searchParams;
    res.end('You can close this window.');
    this.waiting.shift()?.(params);
  });

  async start(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/callback`;
  }

  next(): Promise<URLSearchParams> {
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  close(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()));
  }
}

export const PASSWORD = 'correct horse battery staple';

/** A person with a password and an organisation they own. */
export async function newPerson(): Promise<{ personId: string; orgId: string; email: string }> {
  const email = `app-user-${randomUUID().slice(0, 8)}@example.com`;
  const made = await createPerson(stack().db, {
    email,
    name: 'Ada',
    passwordHash: await hashPassword(PASSWORD),
    orgName: `Ada Co ${randomUUID().slice(0, 4)}`,
  });
  if (!made?.org) throw new Error('person not created');
  return { personId: made.person.id, orgId: made.org.orgId, email };
}

/** The person signs in to the console (if the browser has no session) and allows the app. */
export async function consent(page: Page, authorization: URL, email: string, decision: 'Allow' | 'Deny' = 'Allow'): Promise<void> {
  await page.goto(authorization.href);
  if (new URL(page.url()).pathname === '/console/sign-in') {
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }
  await page.waitForURL(/\/console\/authorize\//);
  await screenshot(page, 'oauth/consent');
  await page.getByRole('button', { name: decision }).click();
}

export function mcpTransport(api: Api, app: DesktopApp): StreamableHTTPClientTransport {
  return new StreamableHTTPClientTransport(new URL(`${api.url}/mcp`), { authProvider: app });
}

/**
 * From nothing to a connected MCP client: the first connect is refused (401), the SDK discovers the metadata,
 * registers and sends the person to sign in; they consent in the browser; the code comes back to the receiver and is
 * exchanged; the second connect succeeds.
 */
export async function connectFromNothing(
  api: Api,
  app: DesktopApp,
  receiver: RedirectReceiver,
  email: string,
  page?: Page,
): Promise<Client> {
  const first = mcpTransport(api, app);
  const refused = new Client({ name: app.name, version: '1.0.0' });
  await refused.connect(first).then(
    () => {
      throw new Error('connected without signing in');
    },
    (err: Error) => {
      if (!/unauthori[sz]ed/i.test(err.message)) throw err;
    },
  );
  if (!app.pendingAuthorization) throw new Error('the SDK did not ask the person to sign in');
  const redirected = receiver.next();
  await consent(page ?? (await newPage()), app.pendingAuthorization, email);
  const params = await redirected;
  const code = params.get('code');
  if (!code) throw new Error(`no code: ${params.toString()}`);
  await first.finishAuth(code);
  const client = new Client({ name: app.name, version: '1.0.0' });
  await client.connect(mcpTransport(api, app));
  return client;
}

/**
 * Tokens for `resource` (`/v1` or `/mcp`) the way the SDK gets them, without an MCP session: discovery from the
 * resource's metadata, registration, the person's consent in the browser, the code exchanged with its PKCE verifier.
 */
export async function signIn(
  api: Api,
  app: DesktopApp,
  receiver: RedirectReceiver,
  email: string,
  resource: 'v1' | 'mcp',
  decision: 'Allow' | 'Deny' = 'Allow',
  page?: Page,
): Promise<URLSearchParams> {
  const serverUrl = `${api.url}/${resource}`;
  if ((await auth(app, { serverUrl })) !== 'REDIRECT' || !app.pendingAuthorization) throw new Error('expected a sign-in');
  const redirected = receiver.next();
  await consent(page ?? (await newPage()), app.pendingAuthorization, email, decision);
  const params = await redirected;
  const code = params.get('code');
  if (code) await auth(app, { serverUrl, authorizationCode: code });
  return params;
}
