import type { Knex } from 'knex';
import { randomBase62 } from '../../domain/api-keys';
import type { Tier } from '../../domain/modes';
import { callStatsByTier, type CallStats, type CallStatsRow } from './mode-call-stats';
import { preparedAs } from '../prepared';
import type { DbOrTrx } from './shared';

/**
 * Requests-per-minute and concurrency limits, held in Postgres so every API process enforces the same limit
 * (DESIGN §8). Each check is a single round trip.
 */

/** A lease not renewed within this long is treated as a crashed process's slot and reclaimed. */
export const LEASE_TTL_MS = 60_000;

export const RATE_WINDOW_MS = 60_000;

export interface Admission {
  allowed: boolean;
  /** Whole seconds until a refused request would be admitted (≥ 1); 0 when admitted. */
  retryAfterSeconds: number;
  /** Requests the key has left in the window after this one (0 when refused and full). */
  remaining: number;
  /** Milliseconds until the window holds none of the key's requests, so its whole limit is free again. */
  resetMs: number;
}

/**
 * Admits `count` requests of the key (all or none) when no more than `limit` would then have been admitted in the
 * last `windowMs` (a sliding window). A count above the limit is never admitted: it waits a whole window, in vain.
 */
export async function admitRequest(
  db: DbOrTrx,
  keyId: string,
  limit: number,
  windowMs: number = RATE_WINDOW_MS,
  count = 1,
): Promise<Admission> {
  const res = await db.raw<{ rows: AdmissionRow[] }>(ADMIT_REQUEST, [keyId, limit, windowMs, count]).options(preparedAs(ADMIT_REQUEST));
  return toAdmission(res.rows[0], windowMs);
}

const ADMIT_REQUEST = 'select allowed, retry_after_ms, remaining, reset_ms from admit_request(?, ?, ?, ?)';

/** What `admit_request` answers. */
export interface AdmissionRow {
  allowed: boolean;
  retry_after_ms: number;
  remaining: number;
  reset_ms: number;
}

export function toAdmission(row: AdmissionRow, windowMs: number): Admission {
  const waitMs = row.retry_after_ms < 0 ? windowMs : row.retry_after_ms;
  return {
    allowed: row.allowed,
    retryAfterSeconds: row.allowed ? 0 : Math.max(1, Math.ceil(waitMs / 1000)),
    remaining: row.remaining,
    resetMs: row.reset_ms,
  };
}

/** Takes one of the organisation's `limit` slots; the lease id, or undefined when all are in use. */
export async function acquireLease(db: DbOrTrx, orgId: string, limit: number): Promise<string | undefined> {
  const id = newLeaseId();
  const res = await db.raw<{ rows: { ok: boolean }[] }>(ACQUIRE, [orgId, id, limit, LEASE_TTL_MS]).options(preparedAs(ACQUIRE));
  return res.rows[0].ok ? id : undefined;
}

const ACQUIRE = 'select acquire_concurrency_lease(?, ?, ?, ?) as ok';

const newLeaseId = (): string => `lease_${randomBase62(20)}`;

export async function renewLease(db: DbOrTrx, leaseId: string): Promise<void> {
  await db.raw(RENEW, [LEASE_TTL_MS, leaseId]).options(preparedAs(RENEW));
}

const RENEW = 'update concurrency_leases set expires_at = now() + make_interval(secs => ? / 1000.0) where id = ?';

export async function releaseLease(db: DbOrTrx, leaseId: string): Promise<void> {
  await db.raw(RELEASE, [leaseId]).options(preparedAs(RELEASE));
}

const RELEASE = 'delete from concurrency_leases where id = ?';

/** Live leases of an organisation (for tests and operators). */
export async function leasesInFlight(db: DbOrTrx, orgId: string): Promise<number> {
  const row = (await liveLeases(db, orgId).count<{ n: string }[]>('* as n'))[0];
  return Number(row.n);
}

/** The organisation's leases not yet expired: the calls it has in flight. */
function liveLeases(db: DbOrTrx, orgId: string): Knex.QueryBuilder {
  return db('concurrency_leases').where('org_id', orgId).andWhere('expires_at', '>', db.fn.now());
}

/** What admitting an estimate read: refused (every slot taken), or the mode's counts and the own keys' families. */
export type EstimateAdmission =
  { admitted: false } | { admitted: true; lease: string | undefined; stats: Record<Tier, CallStats>; ownFamilies: Set<string> };

/**
 * An estimate's one round trip after its mode (issue 42 item 3): one of the organisation's `limit` slots, the
 * estimate's record, its mode configuration's recorded calls per tier (with a first wave's count of them, issue 52)
 * and the organisation's own provider families (when `ownKeys`), in one statement; the record lets a receipt lookup
 * of the estimate's id say that no deliberation ran. Nothing is written when every slot is taken. `holdSlot` takes a
 * lease, which the caller releases, for an estimate that waits on a classifier model; without it, the estimate
 * classifies in process in well under a millisecond, and a free slot now is the slot it would take and give back (no
 * lease).
 */
export async function admitEstimate(
  db: DbOrTrx,
  q: { orgId: string; requestId: string; limit: number; holdSlot: boolean; mode: { id: string; configHash: string }; ownKeys: boolean },
): Promise<EstimateAdmission> {
  const lease = q.holdSlot ? newLeaseId() : undefined;
  const slot = lease
    ? db.raw(ACQUIRE, [q.orgId, lease, q.limit, LEASE_TTL_MS])
    : liveLeases(db, q.orgId).select(db.raw('count(*) < ? as ok', [q.limit]));
  const res = await db
    .raw<{ rows: (Partial<CallStatsRow> & { ok: boolean; families: string[] })[] }>(ADMIT_ESTIMATE, [
      slot,
      q.requestId,
      q.orgId,
      q.ownKeys,
      q.orgId,
      q.mode.id,
      q.mode.configHash,
    ])
    // Two texts: the slot taken as a lease, or counted.
    .options(preparedAs(`${ADMIT_ESTIMATE}\n-- slot: ${lease ? 'lease' : 'count'}`));
  if (!res.rows[0].ok) return { admitted: false };
  const stats = callStatsByTier(res.rows.flatMap((r) => (r.tier ? [r as CallStatsRow] : [])));
  return { admitted: true, lease, stats, ownFamilies: new Set(res.rows[0].families) };
}

const ADMIT_ESTIMATE = `
  with slot as (?),
       est as (insert into estimate_requests (id, org_id) select ?, ? from slot where slot.ok)
  select slot.ok, array(select family from provider_credentials where slot.ok and ?::boolean and org_id = ?) as families,
         s.tier, s.n, s.input_tokens, s.output_tokens, s.mode_fee_micros, s.wave_calls, s.wave_all_asked
    from slot left join mode_call_stats s on slot.ok and s.mode_id = ? and s.config_hash = ?`;

export async function isEstimate(db: DbOrTrx, orgId: string, requestId: string): Promise<boolean> {
  return (await db('estimate_requests').where({ id: requestId, org_id: orgId }).first('id')) !== undefined;
}

/** A request refused before it ran, so a receipt lookup of its id can say so. A repeat of the id is ignored. */
export async function recordRefusal(db: DbOrTrx, orgId: string, requestId: string, code: string): Promise<void> {
  await db('refused_requests').insert({ id: requestId, org_id: orgId, code }).onConflict('id').ignore();
}

export async function refusalCode(db: DbOrTrx, orgId: string, requestId: string): Promise<string | undefined> {
  const row = (await db('refused_requests').where({ id: requestId, org_id: orgId }).first('code')) as { code: string } | undefined;
  return row?.code;
}
