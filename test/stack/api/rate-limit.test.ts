import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { admitRequest } from '../../../db/repositories/limits';
import { stack } from '../../harness/stack';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('requests per window: a sliding window in Postgres', () => {
  it('admits at most the limit in any window, however the requests straddle a boundary, with an exact Retry-After', async () => {
    const { db } = stack();
    const key = `key_${randomUUID()}`;
    const windowMs = 1_500;
    const first = await Promise.all(Array.from({ length: 5 }, () => admitRequest(db, key, 3, windowMs)));
    assert.equal(first.filter((a) => a.allowed).length, 3, 'concurrent requests cannot overshoot the limit');
    assert.deepEqual(
      first.filter((a) => !a.allowed).map((a) => a.retryAfterSeconds),
      [2, 2],
    );
    // Two thirds of a window later a fixed window might have reset; a sliding one has not.
    await sleep(1_000);
    assert.equal((await admitRequest(db, key, 3, windowMs)).allowed, false);
    await sleep(600);
    const later = await Promise.all(Array.from({ length: 4 }, () => admitRequest(db, key, 3, windowMs)));
    assert.equal(later.filter((a) => a.allowed).length, 3, 'the window slid past the first three');
  });
});
