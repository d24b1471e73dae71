import { temporal } from '@temporalio/proto';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { historiesDir, replayHistories } from '../../harness/histories';

/**
 * Determinism guard: the stored histories of real runs (recorded with QUORUM_RECORD_HISTORIES=1 from the
 * deliberation tests) must replay against today's workflow code without a nondeterminism error.
 */
describe('deliberation workflow replays its stored histories', function () {
  this.timeout(120_000);

  it('replays every stored history without nondeterminism', async () => {
    const files = fs.readdirSync(historiesDir).filter((f) => f.endsWith('.pb'));
    assert.ok(files.length >= 11, `expected the recorded histories in ${historiesDir}`);
    const idOf = (f: string): string => {
      const sidecar = path.join(historiesDir, f.replace(/\.pb$/, '.id'));
      return fs.existsSync(sidecar) ? fs.readFileSync(sidecar, 'utf8') : f.replace(/\.pb$/, '');
    };
    const histories = files.map((f) => ({
      workflowId: idOf(f),
      history: temporal.api.history.v1.History.decode(fs.readFileSync(path.join(historiesDir, f))),
    }));
    const { replayed, failures } = await replayHistories(histories);
    assert.equal(replayed, files.length);
    assert.deepEqual(failures, []);
  });
});
