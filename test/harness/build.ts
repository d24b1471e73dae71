import { execFileSync } from 'node:child_process';
import { repoRoot } from '../../infra/paths';

let built = false;

/**
 * `npm run build` once per test process: the suites that run the product as an operator does (`npm start`, `npm run
 * start:cluster`) run the compiled JavaScript under dist/, as those commands build it first.
 */
export function buildOnce(): void {
  if (built) return;
  execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: repoRoot, stdio: 'inherit' });
  built = true;
}
