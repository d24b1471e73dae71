import type { Knex } from 'knex';
import { QuorumError } from '../../domain/errors';

/** Every repository function takes either the pool or a caller's transaction, so a settle step can compose them. */
export type DbOrTrx = Knex | Knex.Transaction;

/** A write referencing an unknown organisation fails its foreign key; callers get the spec's `not_found` instead. */
export async function unknownOrgAsNotFound<T>(orgId: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if ((err as { code?: unknown }).code === '23503') throw new QuorumError('not_found', `no organisation ${orgId}`);
    throw err;
  }
}

/**
 * Failures a retry cannot cure: Postgres data exceptions (SQLSTATE class 22) and integrity violations (23).
 * Anything else (a connection refused, a deadlock, a timeout) is retried until the database is back.
 */
export function isDeterministicDbError(err: unknown): boolean {
  const code = err instanceof Error && 'code' in err ? err.code : undefined;
  return typeof code === 'string' && /^2[23]/.test(code);
}
