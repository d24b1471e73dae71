import type { Context, Middleware, Next } from 'koa';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Db } from '../../db/knex';
import { authenticate, type AuthContext } from '../../db/repositories/api-keys';
import { countRequest } from '../../db/repositories/limits';
import type { Scope } from '../../domain/api-keys';
import { QuorumError } from '../../domain/errors';

/** What the gate leaves on `ctx.state` for the handlers behind it. */
export interface ApiState {
  /** The id error bodies report as `svc.request_id` (completions and estimates have one from the start). */
  requestId?: string;
  auth?: AuthContext;
  /** `performance.now()` when the request reached the gate: the start of this round trip's own timing. */
  startedAt?: number;
}

export const DEFAULT_REQUESTS_PER_MINUTE = 60;

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The caller the gate authenticated; only reachable behind `gate()`. */
export function authOf(ctx: Context): AuthContext {
  const auth = (ctx.state as ApiState).auth;
  if (!auth) throw new Error('handler reached without the gate');
  return auth;
}

export function startedAt(ctx: Context): number {
  return (ctx.state as ApiState).startedAt ?? performance.now();
}

/**
 * DESIGN §8's first five checks, in order: browser `Origin` (403) → key (401) → organisation (403) →
 * scope (403) → requests per minute per key (429 with Retry-After).
 */
export function gate(db: Db, scope: Scope, requestIdPrefix?: 'req' | 'est'): Middleware {
  return async (ctx: Context, next: Next): Promise<void> => {
    const state = ctx.state as ApiState;
    state.startedAt = performance.now();
    if (requestIdPrefix) state.requestId = `${requestIdPrefix}_${randomBytes(12).toString('hex')}`;
    // A browser sends Origin on cross-origin fetches; a real key seen there is treated as leaked (spec 01, Authentication 3).
    if (ctx.headers.origin !== undefined) throw new QuorumError('browser_origin_not_allowed', 'Requests from a browser are not accepted; call the API from a server.');
    const match = BEARER.exec(ctx.get('authorization'));
    if (!match) throw new QuorumError('invalid_api_key', 'Send the API key as `Authorization: Bearer <key>`.');
    const auth = await authenticate(db, match[1]);
    if (!auth.scopes.includes(scope)) throw new QuorumError('insufficient_scope', `This key lacks the \`${scope}\` scope.`);
    const window = await countRequest(db, auth.keyId);
    const limit = auth.limits.requestsPerMinute ?? DEFAULT_REQUESTS_PER_MINUTE;
    if (window.count > limit) {
      throw new QuorumError('rate_limit_exceeded', `More than ${limit} requests this minute for this key.`, { retryAfter: window.retryAfterSeconds });
    }
    state.auth = auth;
    await next();
  };
}
