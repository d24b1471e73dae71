import type { Knex } from 'knex';
import { addDocument } from '../db/repositories/documents';
import type { Principal } from './principal';

/** The operator adds a grounding document; its id. */
export async function addGroundingDocument(
  deps: { db: Knex },
  _principal: Principal & { via: 'operator' },
  doc: { title: string; body: string },
): Promise<string> {
  return addDocument(deps.db, doc);
}
