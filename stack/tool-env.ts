import os from 'node:os';
import path from 'node:path';
import type { Config } from '../infra/config';

/**
 * What the launcher's tool finders and installers (stack/go-binary.ts, stack/python-venv.ts, stack/temporal-binary.ts)
 * take from the environment: read once by an entry point (loadConfig) and handed down.
 */
export interface ToolEnv {
  /** `${XDG_CACHE_HOME:-~/.cache}/quorum`: tools built or installed once per user, outside the checkout. */
  cacheDir: string;
  /** The Python the Python tools' virtual environments are made with. */
  python: string;
  /** A Temporal CLI to use as it is, instead of looking for one. */
  temporalCliPath: string | undefined;
  /** The environment an installer (`go install`, pip) and a tool run in, and whose PATH is searched: the entry point's own. */
  inherited: Readonly<NodeJS.ProcessEnv>;
}

export function toolEnv(
  config: Pick<Config, 'XDG_CACHE_HOME' | 'QUORUM_PYTHON' | 'TEMPORAL_CLI_PATH'>,
  inherited: Readonly<NodeJS.ProcessEnv>,
): ToolEnv {
  return {
    cacheDir: path.join(config.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'quorum'),
    python: config.QUORUM_PYTHON,
    temporalCliPath: config.TEMPORAL_CLI_PATH,
    inherited,
  };
}
