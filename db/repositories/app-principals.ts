import type { Scope } from '../../domain/api-keys';
import { QuorumError } from '../../domain/errors';
import type { AuthenticatedKey } from './api-keys';
import { planOfPersonSql, toPlan } from './plans';
import type { DbOrTrx } from './shared';

export interface AppGrant {
  personId: string;
  orgId: string;
  clientId: string;
  grantId: string;
  scopes: Scope[];
}

/**
 * The counterpart of `authenticate` (API keys) for a connected app's validated access token: in one query, that the
 * person is still a member of the organisation (else 401 `invalid_oauth_token`: the grant no longer stands), that the
 * organisation is active (else 403 `org_suspended`), and the person's plan. The context is key-shaped so every
 * operation takes it: `keyId` `app:<grantId>` (the per-minute rate limit and derived idempotency keys are per grant),
 * a live call, the granted scopes, no per-key limits (the plan sets the person's), never the owner's key.
 */
export async function authenticateApp(db: DbOrTrx, grant: AppGrant): Promise<AuthenticatedKey> {
  const { rows } = await db.raw<{ rows: ({ org_status: string | null; member: boolean } & Record<string, unknown>)[] }>(
    `select o.status as org_status,
            exists (select 1 from memberships m where m.person_id = ? and m.org_id = o.id) as member,
            p.id, p.name, p.tiers, p.modes, p.monthly_allowance_micros, p.max_in_flight
       from plans p left join organisations o on o.id = ?
      where p.id = ${planOfPersonSql}`,
    [grant.personId, grant.orgId, grant.personId],
  );
  const row = rows[0];
  if (!row) throw new QuorumError('internal_error', 'the person has no plan, not even the default one');
  if (row.org_status === null || !row.member)
    throw new QuorumError('invalid_oauth_token', 'The signed-in person is no longer a member of this organisation; sign in again.');
  if (row.org_status !== 'active') throw new QuorumError('org_suspended', 'The organisation is suspended.');
  return {
    keyId: `app:${grant.grantId}`,
    orgId: grant.orgId,
    keyKind: 'live',
    scopes: grant.scopes,
    allowedModes: null,
    limits: { requestsPerMinute: null, concurrency: null, maxInputTokens: null, maxCostMicros: null },
    isOwner: false,
    app: { personId: grant.personId, clientId: grant.clientId, grantId: grant.grantId, plan: toPlan(row) },
  };
}
