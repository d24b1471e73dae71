import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { importCycles, root, tsFiles } from './import-graph';

/**
 * No circle of imports, type-only imports included: `npm run lint`'s import-x/no-cycle catches value imports but
 * skips `import type`, and a circle of types still ties its modules into one unit to read and change.
 */
describe('no import circles', () => {
  it('the project has none, type imports included', () => {
    const cycles = importCycles(tsFiles()).map((c) => c.map((f) => path.relative(root, f)).join(' ⇄ '));
    assert.deepEqual(cycles, []);
  });

  it('the check finds a circle of type imports', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-cycle-'));
    try {
      fs.writeFileSync(path.join(dir, 'a.ts'), "import type { B } from './b';\nexport interface A { b?: B }\n");
      fs.writeFileSync(path.join(dir, 'b.ts'), "import type { A } from './a';\nexport interface B { a?: A }\n");
      fs.writeFileSync(path.join(dir, 'c.ts'), "import type { A } from './a';\nexport type C = A;\n");
      assert.deepEqual(importCycles(tsFiles(dir)), [[path.join(dir, 'a.ts'), path.join(dir, 'b.ts')]]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
