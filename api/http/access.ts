import type { Db } from '../../db/knex';
import type { AppGrant } from '../../db/repositories/app-principals';
import type { Admission } from '../../db/repositories/limits';
import { isAccessTokenShaped, isApiKeyAttempt, ORG_REQUESTS_PER_MINUTE, type Scope } from '../../domain/api-keys';
import { QuorumError } from '../../domain/errors';
import { isDependencyOutage } from './errors';
import { ADMIN_KEY_CALLS_NOTHING, requireScope } from '../../operations/checks';
import { requireAdminKey } from '../../operations/activity';
import { authenticateGrant, authenticateKey, authenticateKeyCounted, countRequests, type CallSite } from '../../operations/callers';
import type { StoreDeps } from '../../operations/deps';
import type { KeyPrincipal } from '../../operations/principal';

/**
 * Who is calling, and may they: the checks every edge (REST and MCP) runs first, in DESIGN §8's order —
 * browser `Origin` (403) → key or access token (401) → organisation (403) → scope (403) → requests per minute per
 * key or grant (429).
 */
export interface Credentials {
  /** The `Authorization` header as sent. */
  authorization?: string;
  /** The `Origin` header, present when a browser sent the request. */
  origin?: string;
  /** Which edge: an access token is good only on the one it was issued for. */
  edge: Edge;
  /** The client's address, as the edge saw it (the principal's, for the activity log). */
  ip?: string;
  /** Told the key's requests-per-minute once it is counted, admitted or not (the `x-ratelimit-*` headers). */
  onRate?: (rate: RateState) => void;
}

/** A key's requests-per-minute as this request left it (issue 40 item 7). */
export interface RateState {
  limit: number;
  remaining: number;
  /** Until the window holds none of the key's requests again. */
  resetMs: number;
}

/** The two protected resources; an access token is good only on the edge it was issued for (its audience). */
export type Edge = 'mcp' | 'v1';
export const EDGES: readonly Edge[] = ['mcp', 'v1'];

/** What the access check needs of the authorization server (api/oauth/server.ts): the grant behind a token. */
export interface AccessTokens {
  verify(token: string, edge: Edge): Promise<AppGrant>;
}

/** What the access check reads: the database, and the authorization server that knows access tokens. */
export interface AccessDeps {
  db: Db;
  oauth: AccessTokens;
}

export const DEFAULT_REQUESTS_PER_MINUTE = ORG_REQUESTS_PER_MINUTE;

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** What a route asks of its caller: a scope, or an admin key (`/v1/organization/…`). */
export const ADMIN_SCOPE = 'admin';
/**
 * The account reads (`/v1/usage`, `/v1/balance`, `/v1/receipts`, `/v1/ledger`): a key with the `receipts` scope, or
 * the organisation's admin key, which runs the account from code (as OpenAI's admin keys read its Usage API).
 */
export const ACCOUNT_READ_SCOPE = 'account_read';
export type GateScope = Scope | typeof ADMIN_SCOPE | typeof ACCOUNT_READ_SCOPE;

/** `scope` undefined: the caller checks each operation's own scope (`requireScope`), as the MCP server does per tool. */
export async function authorize(deps: AccessDeps, credentials: Credentials, scope: GateScope | undefined): Promise<KeyPrincipal> {
  // A browser sends Origin on cross-origin fetches; a real key seen there is treated as leaked (spec 01, Authentication 3).
  if (credentials.origin !== undefined)
    throw new QuorumError('browser_origin_not_allowed', 'Requests from a browser are not accepted; call the API from a server.');
  const match = BEARER.exec(credentials.authorization ?? '');
  if (!match) throw new QuorumError('invalid_api_key', 'Send the API key as `Authorization: Bearer <key>`.');
  try {
    return await admit(deps, credentials, match[1], scope);
  } catch (err) {
    // The MCP server names its gate's own failure (spec 02); `/v1` answers service_unavailable, as for every outage.
    if (credentials.edge === 'mcp' && isDependencyOutage(err))
      throw new QuorumError('gate_check_failed', 'The access check could not complete; retry shortly.', { retryAfter: 2 });
    throw err;
  }
}

async function admit(
  deps: AccessDeps,
  { edge, ip, onRate }: Credentials,
  bearer: string,
  scope: GateScope | undefined,
): Promise<KeyPrincipal> {
  // Our keys have a prefix of their own and access tokens a shape of their own (spec 01 item 7); anything else is a
  // key gone wrong, often a provider's key pasted here, and is answered as one (spec 01: a malformed key).
  if (!isApiKeyAttempt(bearer) && !isAccessTokenShaped(bearer))
    throw new QuorumError(
      'invalid_api_key',
      "This is neither a Quorum API key (they begin qrm_live_ or qrm_test_) nor an access token Quorum issued. A provider's own key is set in the console, under provider keys, not sent here.",
    );
  // The activity log names the REST edge `api`.
  const site: CallSite = { edge: edge === 'v1' ? 'api' : edge, ...(ip !== undefined && { ip }) };
  if (!isApiKeyAttempt(bearer)) {
    const auth = await authenticateGrant(deps, await deps.oauth.verify(bearer, edge), site);
    checkGateScope(auth, scope);
    await admitCalls(deps, auth, 1, onRate);
    return auth;
  }
  // A key for a calling route is counted in the statement that reads it (one round trip, issue 42); the rules below
  // still decide, and a request that statement did not count is counted after them.
  const foldable = scope !== ADMIN_SCOPE && scope !== ACCOUNT_READ_SCOPE;
  const { auth, admission } = foldable
    ? await authenticateKeyCounted(deps, bearer, site, { scope: scope ?? null, defaultLimit: DEFAULT_REQUESTS_PER_MINUTE })
    : { auth: await authenticateKey(deps, bearer, site), admission: undefined };
  checkGateScope(auth, scope);
  await admitCalls(deps, auth, 1, onRate, admission);
  return auth;
}

/** An admin key (issue 41) reaches the organisation's own routes, and only it does, and reads the account; it calls nothing. */
function checkGateScope(auth: KeyPrincipal, scope: GateScope | undefined): void {
  if (scope === ADMIN_SCOPE) requireAdminKey(auth);
  else if (scope === ACCOUNT_READ_SCOPE) {
    if (auth.keyKind !== 'admin') requireScope(auth, 'receipts');
  } else if (auth.keyKind === 'admin') throw new QuorumError('insufficient_scope', ADMIN_KEY_CALLS_NOTHING);
  else if (scope !== undefined) requireScope(auth, scope);
}

/**
 * Counts `count` more calls against the caller's requests per minute, all or none: the rest of a JSON-RPC batch on
 * `/mcp`, where each call counts (its first was counted by `authorize`).
 */
export async function admitMore(deps: AccessDeps, auth: KeyPrincipal, count: number): Promise<void> {
  try {
    await admitCalls(deps, auth, count);
  } catch (err) {
    if (isDependencyOutage(err))
      throw new QuorumError('gate_check_failed', 'The access check could not complete; retry shortly.', { retryAfter: 2 });
    throw err;
  }
}

/** `counted`: the admission the key's own statement made already (`authenticateKeyCounted`). */
async function admitCalls(
  deps: StoreDeps,
  auth: KeyPrincipal,
  count: number,
  onRate?: (rate: RateState) => void,
  counted?: Admission,
): Promise<void> {
  const limit = auth.limits.requestsPerMinute ?? DEFAULT_REQUESTS_PER_MINUTE;
  const admission = counted ?? (await countRequests(deps, auth.keyId, limit, count));
  onRate?.({ limit, remaining: admission.remaining, resetMs: admission.resetMs });
  if (admission.allowed) return;
  const message =
    count === 1
      ? `More than ${limit} requests in the last minute for this key.`
      : count + 1 > limit
        ? `This batch carries ${count + 1} calls; each counts, and the key allows ${limit} a minute. Send fewer at once.`
        : `This batch's ${count + 1} calls would pass the key's ${limit} requests in the last minute.`;
  throw new QuorumError('rate_limit_exceeded', message, { retryAfter: admission.retryAfterSeconds });
}
