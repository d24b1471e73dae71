import fs from 'node:fs';
import path from 'node:path';
import Mocha from 'mocha';

/**
 * Mocha's spec reporter, which also writes how long each test file took (seconds, its top-level suites from first
 * hook to last) to the JSON file `QUORUM_TEST_TIMES` names: what the sharded run (test/harness/shards.ts) balances
 * its shards on. Without `QUORUM_TEST_TIMES` it is the spec reporter.
 */
export default class ShardReporter extends Mocha.reporters.Spec {
  constructor(runner: Mocha.Runner, options?: Mocha.MochaOptions) {
    super(runner, options);
    const out = process.env.QUORUM_TEST_TIMES;
    if (!out) return;
    const began = new Map<Mocha.Suite, number>();
    const seconds: Record<string, number> = {};
    const { EVENT_SUITE_BEGIN, EVENT_SUITE_END, EVENT_RUN_END } = Mocha.Runner.constants;
    const topLevel = (suite: Mocha.Suite): boolean => suite.parent?.root === true && suite.file !== undefined;
    runner.on(EVENT_SUITE_BEGIN, (suite: Mocha.Suite) => {
      if (topLevel(suite)) began.set(suite, Date.now());
    });
    runner.on(EVENT_SUITE_END, (suite: Mocha.Suite) => {
      const start = began.get(suite);
      if (start === undefined || suite.file === undefined) return;
      const file = path.relative(process.cwd(), suite.file);
      seconds[file] = (seconds[file] ?? 0) + (Date.now() - start) / 1000;
    });
    runner.once(EVENT_RUN_END, () => {
      fs.mkdirSync(path.dirname(out), { recursive: true });
      fs.writeFileSync(out, `${JSON.stringify(seconds, null, 2)}\n`);
    });
  }
}
