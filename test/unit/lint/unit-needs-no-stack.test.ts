import assert from 'node:assert/strict';
import path from 'node:path';
import { chainTo, root, tsFiles } from './import-graph';

/**
 * `npm run test:unit` promises seconds and no server: no file under test/unit may reach, through its imports, a
 * module that starts Temporal, Postgres or a browser. Read from the source, so it holds for files not run.
 */
const STARTS_A_SERVER = ['test/harness/stack.ts', 'test/harness/isolated-stack.ts', 'test/harness/browser.ts', 'infra/postgres.ts'];
const startsAServer = (f: string): boolean => STARTS_A_SERVER.includes(path.relative(root, f));
const relative = (chain: string[]): string => chain.map((f) => path.relative(root, f)).join(' → ');

describe('test/unit starts no server', () => {
  it('no unit test file imports, at any depth, a module that starts Temporal, Postgres or a browser', () => {
    const files = tsFiles(path.join(root, 'test', 'unit')).filter((f) => f.endsWith('.test.ts'));
    assert.ok(files.length > 20, `expected the unit tests under test/unit, found ${files.length}`);
    const offenders = files.flatMap((f) => {
      const chain = chainTo(f, startsAServer);
      return chain ? [relative(chain)] : [];
    });
    assert.deepEqual(offenders, [], 'these belong under test/stack');
  });

  it('the check sees a stack test reach the stack', () => {
    const chain = chainTo(path.join(root, 'test', 'stack', 'accounts', 'api-keys.test.ts'), startsAServer);
    assert.ok(chain && relative(chain).endsWith('test/harness/stack.ts'), `expected a chain to the stack, got ${String(chain)}`);
  });
});
