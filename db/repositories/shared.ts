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
