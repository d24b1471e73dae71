import { temporal } from '@temporalio/proto';
import { type InjectedSinks, Worker } from '@temporalio/worker';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { workflowsPath } from '../../../worker/workers';
import type { DeliberationSinks } from '../../../workflows/messages';
import { historiesDir } from '../../harness/histories';

/**
 * Determinism guard: the stored histories of real runs (recorded with QUORUM_RECORD_HISTORIES=1 from the
 * deliberation tests) must replay against today's workflow code without a nondeterminism error.
 */
/** The worker's sinks are never called on replay, but must be registered, or every call logs an error. */
const sinks: InjectedSinks<DeliberationSinks> = {
  deliberationEvents: {
    record: {
      fn: () => {
        throw new Error('a sink called on replay');
      },
      callDuringReplay: false,
    },
  },
};

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
    const failures: string[] = [];
    let replayed = 0;
    for await (const result of Worker.runReplayHistories({ workflowsPath, sinks }, histories)) {
      replayed++;
      if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
    }
    assert.equal(replayed, files.length);
    assert.deepEqual(failures, []);
  });
});
