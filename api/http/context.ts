import type { Context } from 'koa';
import type Provider from 'oidc-provider';
import type { AccessTokens, Edge } from './access';
import type { FormSerialiser } from '../forms';
import type { OperationDeps } from '../../operations/deps';

/** What every edge's handler works with: the operations' dependencies, this deployment's serialiser, and its edge settings. */
export interface RouteDeps extends OperationDeps {
  serialiser: FormSerialiser;
  /** The authorization server of connected apps: it knows their access tokens. */
  oauth: AuthorizationServer;
  /** The console's cookies are Secure (production, behind TLS). */
  secureCookies: boolean;
  /** Development: a person may add test balance themselves in the console (in production an operator tops up). */
  selfTopUp: boolean;
}

/**
 * What the edges need of the authorization server (api/oauth/server.ts): the access check verifies tokens, and the
 * console's consent pages finish the provider's interactions and name a resource.
 */
export interface AuthorizationServer extends AccessTokens {
  provider(): Promise<Provider>;
  resource(edge: Edge): string;
}

/** The address the caller reached, for status URLs (Koa 3's `ctx.origin` is the Origin header, not this). */
export function baseUrlOf(ctx: Context): string {
  return `${ctx.protocol}://${ctx.host}`;
}
