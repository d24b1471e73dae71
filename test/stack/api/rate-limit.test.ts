import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { admitRequest, type AdmissionRow } from '../../../db/repositories/limits';
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

  it('answers one row per request: admitted with what is left, refused with the wait, never admissible; expired hits are dropped', async () => {
    const { db } = stack();
    const key = `key_${randomUUID()}`;
    const windowMs = 1_000;
    const admit = async (limit: number, count: number): Promise<AdmissionRow> => {
      const rows = (await db.raw<{ rows: AdmissionRow[] }>('select * from admit_request(?, ?, ?, ?)', [key, limit, windowMs, count])).rows;
      assert.equal(rows.length, 1, `one answer for ${count} of ${limit}`);
      return rows[0];
    };
    const admitted = await admit(3, 2);
    assert.deepEqual([admitted.allowed, admitted.retry_after_ms, admitted.remaining], [true, 0, 1]);
    assert.ok(admitted.reset_ms > 900 && admitted.reset_ms <= windowMs, `reset ${admitted.reset_ms} ms: the window from now`);
    // Two more would make four in the window: refused until the first of the two leaves it.
    const refused = await admit(3, 2);
    assert.deepEqual([refused.allowed, refused.remaining], [false, 1]);
    assert.ok(refused.retry_after_ms > 0 && refused.retry_after_ms <= windowMs, `wait ${refused.retry_after_ms} ms`);
    const never = await admit(3, 4);
    assert.deepEqual([never.allowed, never.retry_after_ms, never.remaining], [false, -1, 1]);
    await sleep(windowMs + 100);
    const later = await admit(3, 3);
    assert.deepEqual([later.allowed, later.remaining], [true, 0]);
    const stored = (await db('rate_limit_log').where({ key_id: key }).first('hits')) as { hits: Date[] };
    assert.equal(stored.hits.length, 3, 'only the hits inside the window are kept');
  });
});
