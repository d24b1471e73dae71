import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const repoRoot = path.join(__dirname, '..', '..', '..');
const ONE_FILE = 'test/unit/stack/restart-policy.test.ts';

/** The files whose tests `npm run <script> -- <args>` ran, from mocha's JSON report. */
async function filesRun(script: string, args: string[]): Promise<string[]> {
  const { stdout } = await promisify(execFile)('npm', ['run', '--silent', script, '--', ...args, '--reporter', 'json'], {
    cwd: repoRoot,
    maxBuffer: 16 * 1024 * 1024,
  });
  const report = JSON.parse(stdout) as { tests: { file: string }[] };
  return [...new Set(report.tests.map((t) => path.relative(repoRoot, t.file)))];
}

describe('test scripts: a file argument narrows the run to that file', function () {
  // Each starts mocha (and tsx) afresh.
  this.timeout(60_000);

  for (const script of ['test:unit', 'test:stack']) {
    it(`npm run ${script} -- ${ONE_FILE} runs that file's tests only`, async () => {
      assert.deepEqual(await filesRun(script, [ONE_FILE]), [ONE_FILE]);
    });
  }
});
