import path from 'node:path';
import { loadConfig } from '../infra/config';
import { ensureGoProgram, isExecutable, onPath, type GoProgram } from './go-binary';
import { toolEnv, type ToolEnv } from './tool-env';

/** v1.5.1 is the last CLI release `go install` accepts: later ones carry a `replace` directive. */
export const TEMPORAL_CLI: GoProgram = {
  label: 'the Temporal CLI (dev server)',
  name: 'temporal',
  module: 'github.com/temporalio/cli',
  version: 'v1.5.1',
  packages: ['cmd/temporal'],
};

/**
 * The Temporal CLI binary: `TEMPORAL_CLI_PATH`, else `temporal` on PATH, else our cached build, else built now from
 * its Go module (a few minutes, once per user).
 */
export function resolveTemporalBinary(tools: ToolEnv, log: (line: string) => void = (l) => console.error(l)): string {
  const explicit = tools.temporalCliPath;
  if (explicit) {
    if (!isExecutable(explicit)) throw new Error(`TEMPORAL_CLI_PATH=${explicit} is not an executable file`);
    return explicit;
  }
  const found = onPath('temporal', tools);
  if (found) return found;
  try {
    return path.join(ensureGoProgram(TEMPORAL_CLI, tools, log), 'temporal');
  } catch (err) {
    throw new Error(
      `${err instanceof Error ? err.message : String(err)}; or set TEMPORAL_CLI_PATH to an existing \`temporal\` binary, or TEMPORAL_ADDRESS to a running Temporal server`,
      { cause: err },
    );
  }
}

// `npm run temporal:build`: an entry point, so it reads the environment here.
if (require.main === module) {
  console.log(resolveTemporalBinary(toolEnv(loadConfig(), process.env)));
}
