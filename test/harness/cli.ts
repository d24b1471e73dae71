import { execFile } from 'node:child_process';
import path from 'node:path';
import { stack } from './stack';

const bin = path.join(__dirname, '..', '..', 'bin', 'quorum.js');

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** The `quorum` operator CLI as an operator runs it, against the test stack's Postgres (and Temporal only when `env` names it). */
export function quorumCli(args: string[], dataDir: string, env: Record<string, string | undefined> = {}): Promise<CliRun> {
  const base: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: stack().dbUrl,
    QUORUM_DATA_DIR: dataDir,
    TEMPORAL_ADDRESS: undefined,
  };
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { env: { ...base, ...env } }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}
