import type { Context, Middleware, Next } from 'koa';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { QuorumError } from '../../domain/errors';
import type { KeyPrincipal } from '../../operations/principal';
import { recordRefusedRequest } from '../../operations/receipt';
import { authorize, type AccessDeps, type GateScope, type RateState } from './access';

/** What the gate leaves on `ctx.state` for the handlers behind it. */
export interface ApiState {
  /** The id error bodies report as `svc.request_id` (completions and estimates have one from the start). */
  requestId?: string;
  auth?: KeyPrincipal;
  /** `performance.now()` when the request reached the gate: the start of this round trip's own timing. */
  startedAt?: number;
}

/** The caller the gate authenticated; only reachable behind `gate()`. */
export function authOf(ctx: Context): KeyPrincipal {
  const auth = (ctx.state as ApiState).auth;
  if (!auth) throw new Error('handler reached without the gate');
  return auth;
}

export function startedAt(ctx: Context): number {
  return (ctx.state as ApiState).startedAt ?? performance.now();
}

/** A request's id (`req_…` for completions, `est_…` for estimates): 96 random bits. */
export function newRequestId(prefix: 'req' | 'est'): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}

/** A duration as OpenAI's headers write one (`20ms`, `1.5s`, `1m0s`). */
export function openAiDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))}ms`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = Math.round(ms - minutes * 60_000) / 1000;
  return minutes > 0 ? `${minutes}m${seconds}s` : `${seconds}s`;
}

/**
 * OpenAI's request rate headers (issue 40 item 7), from the key's own per-minute limiter: set on the response as soon
 * as the request is counted, so an error answered later (a 404, a 429 from this limiter) carries them too.
 */
function setRateHeaders(ctx: Context, rate: RateState): void {
  ctx.set('x-ratelimit-limit-requests', String(rate.limit));
  ctx.set('x-ratelimit-remaining-requests', String(rate.remaining));
  ctx.set('x-ratelimit-reset-requests', openAiDuration(rate.resetMs));
}

/**
 * The REST edge of `authorize`: it also gives the request its id and the start of its timing, and records refusals.
 * `scope` undefined: the operation checks the scopes of what it reads (GET /v1/runs).
 */
export function gate(access: AccessDeps, scope: GateScope | undefined, requestIdPrefix?: 'req' | 'est'): Middleware {
  return async (ctx: Context, next: Next): Promise<void> => {
    const state = ctx.state as ApiState;
    state.startedAt = performance.now();
    if (requestIdPrefix) state.requestId = newRequestId(requestIdPrefix);
    const auth = await authorize(
      access,
      {
        authorization: ctx.get('authorization') || undefined,
        origin: ctx.headers.origin,
        edge: 'v1',
        ip: ctx.ip || undefined,
        onRate: (rate) => setRateHeaders(ctx, rate),
      },
      scope,
    );
    state.auth = auth;
    try {
      await next();
    } catch (err) {
      // Refused before it ran, under this request's own id: recorded so its receipt lookup says so (best effort).
      if (state.requestId && err instanceof QuorumError && err.requestId === undefined) {
        await recordRefusedRequest(access, auth.orgId, state.requestId, err.code).catch(() => undefined);
      }
      throw err;
    }
  };
}
