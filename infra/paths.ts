import path from 'node:path';

/** The checkout's root: every local-stack path is relative to it. */
export const repoRoot: string = path.resolve(__dirname, '..');

/** Local-stack state (Temporal's SQLite file, Postgres data, the running stack's address file). */
export const dataDir: string = process.env.QUORUM_DATA_DIR ?? path.join(repoRoot, '.data');

/** Written by `npm start` while the stack runs, so the CLI finds the same database. */
export const stackFile: string = path.join(dataDir, 'stack.json');
