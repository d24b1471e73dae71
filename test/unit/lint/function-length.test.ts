import { ESLint } from 'eslint';
import assert from 'node:assert/strict';
import path from 'node:path';

/** eslint.config.mjs's rule that no product function runs past 120 lines, on code never written to disk. */
const eslint = new ESLint({ cwd: path.join(__dirname, '..', '..', '..') });

/** A function of `lines` lines in all: its opening line, `lines - 2` statements and its closing brace. */
const functionOf = (lines: number): string =>
  `export function long(): number {\n  let n = 0;\n${'  n += 1;\n'.repeat(lines - 4)}  return n;\n}\n`;

async function lengthErrors(filePath: string, lines: number): Promise<string[]> {
  const [result] = await eslint.lintText(functionOf(lines), { filePath });
  assert.ok(result, 'ESLint returned no result');
  return result.messages.filter((m) => m.ruleId === 'max-lines-per-function').map((m) => m.message);
}

describe('lint: no product function is longer than 120 lines', function () {
  this.timeout(30_000);

  for (const file of ['api/console/pages/modes.ts', 'workflows/deliberation.ts', 'engines/index.ts', 'stack/supervisor.ts'])
    it(`refuses a 121-line function in ${file} and accepts one of 120`, async () => {
      assert.equal((await lengthErrors(file, 121)).length, 1);
      assert.deepEqual(await lengthErrors(file, 120), []);
    });

  for (const file of ['test/stack/api/helpers.ts', 'bench/load.ts', 'db/migrations/001_init.ts'])
    it(`leaves ${file} alone (tests, benches and migrations aside)`, async () => {
      assert.deepEqual(await lengthErrors(file, 200), []);
    });
});
