import path from 'node:path';
import { processSetting } from './config';

/**
 * True when this process runs the compiled JavaScript under `dist/` (`npm start`, the image); false when it runs
 * the TypeScript sources through tsx (tests, benches, the CLI).
 */
export const compiled: boolean = path.extname(__filename) === '.js';

/** The checkout's root: every local-stack path is relative to it. */
export const repoRoot: string = path.resolve(__dirname, compiled ? '../..' : '..');

/** A module of ours (`worker/main`, written without extension) as this runtime loads it. */
export function runtimeModule(name: string): string {
  return compiled ? path.join(repoRoot, 'dist', `${name}.js`) : path.join(repoRoot, `${name}.ts`);
}

/** Node options a child needs to load `runtimeModule` paths: tsx for sources, nothing for compiled code. */
export const runtimeExecArgv: readonly string[] = compiled ? [] : ['--import', 'tsx'];

/** Local-stack state (Temporal's SQLite file, Postgres data, the running stack's address file). */
export const dataDir: string = processSetting('QUORUM_DATA_DIR') ?? path.join(repoRoot, '.data');

/** Written by `npm start` while the stack runs, so the CLI finds the same database. */
export const stackFile: string = path.join(dataDir, 'stack.json');
