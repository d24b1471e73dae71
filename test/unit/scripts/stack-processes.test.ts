import assert from 'node:assert/strict';
import { stackProcesses } from '../../harness/supervisor';

/** A process table: [pid, ppid, command line]. */
const table = (rows: [number, number, string][]): { pid: number; ppid: number; cmd: string }[] =>
  rows.map(([pid, ppid, cmd]) => ({ pid, ppid, cmd }));

describe('stackProcesses: what a test ends of a stack it started', () => {
  const all = table([
    [1, 0, '/sbin/init '],
    [50, 1, 'node mocha '],
    // npm start: npm, the supervisor under it, its children (each in a group of its own), the API's child.
    [100, 50, 'npm start '],
    [101, 100, 'node dist/stack/supervisor.js '],
    [102, 101, 'temporal server start-dev --db-filename /tmp/quorum-start-abc/temporal.db '],
    [103, 101, 'node dist/api/main.js '],
    [104, 103, 'node bundle.js '],
    // Postgres: pg_ctl detached it (its parent is init), found by its folder, with its backends.
    [200, 1, 'postgres -D /tmp/quorum-start-abc/pg -c port=5555 '],
    [201, 200, 'postgres: checkpointer '],
    [202, 200, 'postgres: quorum quorum 127.0.0.1(4242) idle '],
    // Another test's stack, in a folder sharing this one's prefix, and an unrelated process.
    [300, 1, 'postgres -D /tmp/quorum-start-abcd/pg '],
    [301, 300, 'postgres: checkpointer '],
    [400, 1, 'bash '],
  ]);

  it('the started process, every descendant, and whatever names the data folder with its own descendants', () => {
    assert.deepEqual(
      [...stackProcesses(all, [100], '/tmp/quorum-start-abc')].sort((a, b) => a - b),
      [100, 101, 102, 103, 104, 200, 201, 202],
    );
  });

  it('the folder named as itself or a path inside it, with or without a trailing slash', () => {
    const alone = table([
      [10, 1, 'thing /tmp/quorum-start-abc '],
      [11, 1, 'thing --dir=/tmp/quorum-start-abc/x '],
      [12, 1, 'thing /tmp/quorum-start-abcd '],
    ]);
    assert.deepEqual([...stackProcesses(alone, [], '/tmp/quorum-start-abc/')], [10, 11]);
  });

  it('a started process already gone: only what names the folder (its id is no seed), and known processes still there', () => {
    assert.deepEqual([...stackProcesses(all, [], '/tmp/quorum-start-abc')], [102, 200, 201, 202]);
    assert.deepEqual([...stackProcesses(all, [103, 999], undefined)], [103, 104]);
  });
});
