import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** v1.5.1 is the last CLI release `go install` accepts: later ones carry a `replace` directive. */
export const TEMPORAL_CLI_VERSION = 'v1.5.1';
const MODULE = `github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}`;

/** Cached per user, outside the checkout, so every fresh clone (CI's too) reuses one build. */
export function cachedBinaryPath(): string {
  const cache = process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache');
  return path.join(cache, 'quorum', `temporal-${TEMPORAL_CLI_VERSION}`, 'temporal');
}

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, name);
    if (dir && isExecutable(candidate)) return candidate;
  }
  return undefined;
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/**
 * The Temporal CLI binary: `TEMPORAL_CLI_PATH`, else `temporal` on PATH, else our cached build,
 * else built now from its Go module (a few minutes, once per machine).
 */
export function resolveTemporalBinary(log: (line: string) => void = (l) => console.error(l)): string {
  const explicit = process.env.TEMPORAL_CLI_PATH;
  if (explicit) {
    if (!isExecutable(explicit)) throw new Error(`TEMPORAL_CLI_PATH=${explicit} is not an executable file`);
    return explicit;
  }
  const found = onPath('temporal');
  if (found) return found;
  const cached = cachedBinaryPath();
  if (isExecutable(cached)) return cached;

  const go = onPath('go');
  if (!go) {
    throw new Error(
      'The Temporal dev server is needed and was not found. Install Go (https://go.dev/dl/, 1.22 or later) so it can be ' +
        `built once with \`go install ${MODULE}\`, or set TEMPORAL_CLI_PATH to an existing \`temporal\` binary, ` +
        'or set TEMPORAL_ADDRESS to a running Temporal server.',
    );
  }
  log(`Building the Temporal dev server ${TEMPORAL_CLI_VERSION} from its Go module (first start only, several minutes)...`);
  const started = Date.now();
  const gobin = path.dirname(cached);
  fs.mkdirSync(gobin, { recursive: true });
  const result = spawnSync(go, ['install', MODULE], { env: { ...process.env, GOBIN: gobin }, stdio: ['ignore', 'inherit', 'inherit'] });
  if (result.status !== 0 || !isExecutable(cached)) {
    throw new Error(`\`go install ${MODULE}\` failed (exit ${String(result.status)}); see the Go output above`);
  }
  log(`Built ${cached} in ${Math.round((Date.now() - started) / 1000)} s`);
  return cached;
}

if (require.main === module) {
  console.log(resolveTemporalBinary());
}
