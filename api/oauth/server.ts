import type { IncomingMessage } from 'node:http';
import type { Context, Middleware } from 'koa';
import Provider, { errors as oidcErrors, type Configuration, type JWK, type KoaContextWithOIDC } from 'oidc-provider';
import type { Db } from '../../db/knex';
import type { AppGrant } from '../../db/repositories/app-principals';
import { ACCESS_TOKEN_BITS, type Scope } from '../../domain/api-keys';
import { QuorumError } from '../../domain/errors';
import { OAUTH_SCOPES, parseAccountId } from '../../domain/plans';
import type { Logger } from '../../infra/log';
import type { SecretBox } from '../../infra/secret-box';
import { authorizationKeys, authorizationStore, countAppRegistration } from '../../operations/oauth-grants';
import { EDGES, type AccessTokens, type Edge } from '../http/access';
import { html } from '../http/html';

/**
 * The OAuth 2.1 authorization server for connected apps (spec 01 item 7, DESIGN §15), from `oidc-provider` (a
 * certified, maintained implementation, itself a Koa app) mounted at `/oauth` in the API process: authorization code
 * with PKCE only, open dynamic client registration (RFC 7591, as MCP clients need), resource indicators (RFC 8707:
 * one audience per edge, `/mcp` and `/v1`), refresh tokens rotated at every use, revocation (RFC 7009). Access tokens
 * are opaque and stored, so a revoked one is refused at once. Sign-in and consent are console pages
 * (api/console/pages/authorize.ts) on the console's own sessions.
 */

export const OAUTH_MOUNT = '/oauth';

/** Open registration (RFC 7591, as MCP clients need it) is limited per client address, so no one can fill the store. */
export const REGISTRATIONS_PER_HOUR = 20;

export interface OAuthSettings {
  /** The service's public origin (`QUORUM_PUBLIC_URL`); the issuer is this plus `/oauth`. */
  publicUrl: string;
  /** Access tokens are short-lived; apps refresh them. */
  accessTokenTtlS: number;
  /** Cookies marked Secure (production, behind TLS). */
  secureCookies: boolean;
}

const DAY_S = 24 * 60 * 60;

export class OAuthServer implements AccessTokens {
  readonly issuer: string;
  private built?: Promise<Provider>;

  constructor(
    private readonly db: Db,
    readonly settings: OAuthSettings,
    private readonly log: Logger,
    private readonly box: SecretBox,
  ) {
    this.issuer = `${settings.publicUrl}${OAUTH_MOUNT}`;
  }

  resource(edge: Edge): string {
    return `${this.settings.publicUrl}/${edge}`;
  }

  /** RFC 9728: where a client learns which authorization server guards `edge`. */
  resourceMetadataUrl(edge: Edge): string {
    return `${this.settings.publicUrl}/.well-known/oauth-protected-resource/${edge}`;
  }

  resourceMetadata(edge: Edge): Record<string, unknown> {
    return {
      resource: this.resource(edge),
      authorization_servers: [this.issuer],
      scopes_supported: [...OAUTH_SCOPES],
      bearer_methods_supported: ['header'],
      resource_name: edge === 'mcp' ? 'Quorum MCP server' : 'Quorum API',
      resource_documentation: `${this.settings.publicUrl}/openapi.json`,
    };
  }

  /**
   * Built on first use: its keys live in Postgres (generated and sealed at the first start). A build that failed (the
   * database was down) is tried again by the next request.
   */
  provider(): Promise<Provider> {
    this.built ??= this.build().catch((err: unknown) => {
      this.built = undefined;
      throw err;
    });
    return this.built;
  }

  private async build(): Promise<Provider> {
    const keys = await authorizationKeys({ db: this.db }, this.box);
    const provider = new Provider(this.issuer, this.configuration(keys.signing, keys.cookie));
    provider.proxy = true;
    // Refused grants and tokens are the client's business; a server_error is ours and worth a line.
    provider.on('server_error', (_ctx: unknown, err: Error) => this.log.error('oauth server error', { err }));
    return provider;
  }

  private configuration(signing: JWK[], cookie: string[]): Configuration {
    const resources = new Set(EDGES.map((e) => this.resource(e)));
    const secure = this.settings.secureCookies;
    return {
      adapter: (model: string) => authorizationStore({ db: this.db }, model),
      jwks: { keys: signing },
      cookies: { keys: cookie, long: { signed: true, secure }, short: { signed: true, secure } },
      findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
      // Listed here too, though they are the resource servers' (getResourceServerInfo): dynamic registration accepts
      // only scopes the server lists, and MCP clients register with the ones the resource metadata names.
      scopes: [...OAUTH_SCOPES],
      responseTypes: ['code'],
      // OAuth 2.1: PKCE on every authorization, confidential clients included.
      pkce: { required: () => true },
      clientDefaults: {
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      },
      // Access tokens get a length of their own, so the edges tell them from a mistyped or foreign key.
      formats: { bitsOfOpaqueRandomness: (_ctx, token) => (token.kind === 'AccessToken' ? ACCESS_TOKEN_BITS : 256) },
      features: {
        devInteractions: { enabled: false },
        registration: { enabled: true },
        revocation: { enabled: true },
        resourceIndicators: {
          enabled: true,
          // A client that names no resource gets a token for the MCP server, the edge apps connect to.
          defaultResource: () => this.resource('mcp'),
          useGrantedResource: () => true,
          getResourceServerInfo: (_ctx, indicator) => {
            if (!resources.has(indicator)) throw new oidcErrors.InvalidTarget(`unknown resource ${indicator}`);
            return {
              scope: OAUTH_SCOPES.join(' '),
              audience: indicator,
              accessTokenTTL: this.settings.accessTokenTtlS,
              accessTokenFormat: 'opaque',
            };
          },
        },
      },
      // No `offline_access` ceremony: an app registered for refresh tokens gets one, rotated at every use.
      issueRefreshToken: (_ctx, client) => client.grantTypeAllowed('refresh_token'),
      rotateRefreshToken: true,
      ttl: {
        AccessToken: this.settings.accessTokenTtlS,
        AuthorizationCode: 60,
        Interaction: 30 * 60,
        Session: 14 * DAY_S,
        Grant: 90 * DAY_S,
        RefreshToken: 30 * DAY_S,
        IdToken: 60 * 60,
      },
      interactions: { url: (_ctx, interaction) => `/console/authorize/${interaction.uid}` },
      renderError: (ctx: KoaContextWithOIDC, out) => {
        ctx.type = 'html';
        ctx.body = html`<!doctype html>
          <html lang="en">
            <head>
              <meta charset="utf-8" />
              <title>Sign-in failed · Quorum</title>
            </head>
            <body>
              <h1>The app's sign-in could not go on</h1>
              <p><code>${out.error}</code>: ${out.error_description ?? ''}</p>
              <p>Go back to the app and start again.</p>
            </body>
          </html>`.value;
      },
    };
  }

  /** Serves the authorization server's endpoints under `/oauth`, and its metadata at the RFC 8414 well-known path. */
  middleware(): Middleware {
    const wellKnown = `/.well-known/oauth-authorization-server${OAUTH_MOUNT}`;
    return async (ctx, next) => {
      const inside = ctx.path === OAUTH_MOUNT || ctx.path.startsWith(`${OAUTH_MOUNT}/`);
      if (!inside && ctx.path !== wellKnown) return next();
      if (ctx.method === 'POST' && ctx.path === `${OAUTH_MOUNT}/reg`) await this.admitRegistration(ctx.ip);
      let provider: Provider;
      try {
        provider = await this.provider();
      } catch (err) {
        this.log.error('oauth server unavailable', { err });
        throw new QuorumError('oauth_unavailable', 'Sign-in is unavailable for a moment; try again shortly.', { retryAfter: 5 });
      }
      // Mounted as koa-mount would: the provider sees its own paths and finds its mount point in originalUrl.
      const req = ctx.req as IncomingMessage & { originalUrl?: string };
      req.originalUrl = inside ? ctx.originalUrl : `${OAUTH_MOUNT}/.well-known/openid-configuration`;
      req.url = inside ? ctx.url.slice(OAUTH_MOUNT.length) || '/' : '/.well-known/openid-configuration';
      ctx.respond = false;
      await provider.callback()(req, ctx.res);
    };
  }

  private async admitRegistration(ip: string): Promise<void> {
    const admission = await countAppRegistration({ db: this.db }, ip, REGISTRATIONS_PER_HOUR);
    if (!admission.allowed)
      throw new QuorumError(
        'rate_limit_exceeded',
        `More than ${REGISTRATIONS_PER_HOUR} app registrations from this address in the last hour.`,
        {
          retryAfter: admission.retryAfterSeconds,
        },
      );
  }

  /**
   * The grant behind a bearer access token presented on `edge`. Refused (unknown, expired, revoked, or issued for
   * the other edge): `invalid_oauth_token`. The token store unreachable: the gate fails closed, `oauth_unavailable`
   * on `/mcp` and `service_unavailable` on `/v1` (spec 02 and spec 01 item 8).
   */
  async verify(token: string, edge: Edge): Promise<AppGrant> {
    let found;
    try {
      const provider = await this.provider();
      found = await provider.AccessToken.find(token);
    } catch (err) {
      this.log.error('access token check failed', { err });
      throw edge === 'mcp'
        ? new QuorumError('oauth_unavailable', 'Sign-in is unavailable for a moment; try again shortly.', { retryAfter: 5 })
        : new QuorumError('service_unavailable', 'The access check could not complete; try again shortly.', { retryAfter: 5 });
    }
    const refused = (why: string): QuorumError =>
      new QuorumError('invalid_oauth_token', `The access token was refused (${why}); sign in again.`);
    // `find` verifies the expiry: an expired token is not found.
    if (!found) throw refused('unknown, expired or revoked');
    const audiences = Array.isArray(found.aud) ? found.aud : [found.aud];
    if (!audiences.includes(this.resource(edge))) throw refused(`issued for another resource than ${this.resource(edge)}`);
    const account = parseAccountId(found.accountId);
    if (!account) throw refused('no account');
    const scopes = (found.scope ?? '').split(' ').filter((s): s is Scope => (OAUTH_SCOPES as readonly string[]).includes(s));
    if (!found.grantId || !found.clientId) throw refused('no grant');
    return { ...account, clientId: found.clientId, grantId: found.grantId, scopes };
  }

  /** The `WWW-Authenticate` challenge of a 401 on `edge` (RFC 6750 §3, RFC 9728 §5.1). */
  challenge(edge: Edge, code: string): string {
    const error = code === 'invalid_oauth_token' ? ', error="invalid_token"' : '';
    return `Bearer resource_metadata="${this.resourceMetadataUrl(edge)}"${error}`;
  }

  /** The two resources' metadata documents (RFC 9728), readable by any client, browsers included. */
  metadataEndpoint(): Middleware {
    return async (ctx: Context, next) => {
      const match = /^\/\.well-known\/oauth-protected-resource\/(mcp|v1)$/.exec(ctx.path);
      if (!match || ctx.method !== 'GET') return next();
      ctx.set('Access-Control-Allow-Origin', '*');
      ctx.set('Cache-Control', 'public, max-age=3600');
      ctx.body = this.resourceMetadata(match[1] as Edge);
    };
  }
}
