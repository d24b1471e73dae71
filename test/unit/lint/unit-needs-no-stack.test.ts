import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

/**
 * `npm run test:unit` promises seconds and no server: no file under test/unit may reach, through its relative
 * imports, a module that starts Temporal, Postgres or a browser. Read from the source, so it holds for files not run.
 */
const root = path.join(__dirname, '..', '..', '..');
const STARTS_A_SERVER = ['test/harness/stack.ts', 'test/harness/isolated-stack.ts', 'test/harness/browser.ts', 'infra/postgres.ts'];
const IMPORT = /(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g;

function resolveImport(fromFile: string, spec: string): string | undefined {
  const base = path.resolve(path.dirname(fromFile), spec);
  return [base, `${base}.ts`, path.join(base, 'index.ts')].find((c) => fs.existsSync(c) && fs.statSync(c).isFile());
}

/** The chain of imports from `file` to the first server-starting module, or undefined. */
function pathToServer(file: string): string[] | undefined {
  const seen = new Set<string>([file]);
  const queue: string[][] = [[file]];
  for (let chain = queue.shift(); chain; chain = queue.shift()) {
    const current = chain[chain.length - 1] ?? file;
    if (STARTS_A_SERVER.includes(path.relative(root, current))) return chain.map((f) => path.relative(root, f));
    for (const match of fs.readFileSync(current, 'utf8').matchAll(IMPORT)) {
      const next = resolveImport(current, match[1] ?? '');
      if (next && !seen.has(next)) {
        seen.add(next);
        queue.push([...chain, next]);
      }
    }
  }
  return undefined;
}

function testFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    return e.isDirectory() ? testFiles(full) : e.name.endsWith('.test.ts') ? [full] : [];
  });
}

describe('test/unit starts no server', () => {
  it('no unit test file imports, at any depth, a module that starts Temporal, Postgres or a browser', () => {
    const files = testFiles(path.join(root, 'test', 'unit'));
    assert.ok(files.length > 20, `expected the unit tests under test/unit, found ${files.length}`);
    const offenders = files.flatMap((f) => {
      const chain = pathToServer(f);
      return chain ? [chain.join(' → ')] : [];
    });
    assert.deepEqual(offenders, [], 'these belong under test/stack');
  });

  it('the check sees a stack test reach the stack', () => {
    const chain = pathToServer(path.join(root, 'test', 'stack', 'accounts', 'api-keys.test.ts'));
    assert.ok(chain?.includes('test/harness/stack.ts'), `expected a chain to test/harness/stack.ts, got ${String(chain)}`);
  });
});
