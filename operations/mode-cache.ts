import type { Db } from '../db/knex';
import { findMode, namesLab } from '../db/repositories/modes';
import type { Form } from '../domain/form';
import type { ModeRecord } from '../domain/modes';

/**
 * The modes this API process found, for the catalogue revision they were found at (issue 42 item 1: one statement
 * fewer on each call and estimate, and no configuration parsed again). Every change to `modes` or `mode_versions`
 * moves the revision (a trigger, migration 033) and each request reads it with its key, so a request is never served
 * a mode older than the catalogue as of its authentication: a release is seen by the next call that starts after it,
 * in every process. Not kept: lab calls (they read invitations too), and "not found" (any text may be asked for).
 */
const MAX_MODES = 1_000;

let revision = -1n;
const found = new Map<string, ModeRecord>();

/** `findMode`, from this process's cache when the request read `at` (undefined: not authenticated by key, ask). */
export async function findModeAt(
  db: Db,
  q: { orgId: string; form: Form; model: string },
  at: bigint | undefined,
): Promise<ModeRecord | undefined> {
  // A request that read an older revision than the cache holds asks the database, as before.
  if (at === undefined || at < revision || namesLab(q.form, q.model)) return findMode(db, q);
  if (at > revision) {
    found.clear();
    revision = at;
  }
  const key = `${q.orgId}\n${q.form}\n${q.model}`;
  const hit = found.get(key);
  if (hit) return hit;
  const mode = await findMode(db, q);
  // Another request may have moved the revision on while this one read.
  if (mode && revision === at) {
    if (found.size >= MAX_MODES) found.clear();
    found.set(key, deepFreeze(mode));
  }
  return mode;
}

/** Shared by every request that finds it, so nothing may change it. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
