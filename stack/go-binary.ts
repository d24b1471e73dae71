import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { ToolEnv } from './tool-env';

/**
 * A Go program built once per user from its module on the Go module proxy (`go install`), cached outside the checkout
 * so every clone and CI run reuse one build: the Temporal CLI (the dev server), and for `npm run start:cluster` the
 * Temporal server, its SQL schema tool and the Temporal Web UI server. None of them declares a `replace` directive,
 * which `go install module@version` refuses.
 */
export interface GoProgram {
  /** What the log calls it. */
  label: string;
  /** The cache folder's name, before its version. */
  name: string;
  module: string;
  version: string;
  /** Packages of the module, each installed as a binary named after its last path element. */
  packages: readonly string[];
}

export function goProgramDir(program: GoProgram, tools: ToolEnv): string {
  return path.join(tools.cacheDir, `${program.name}-${program.version}`);
}

export function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

export function onPath(name: string, tools: ToolEnv): string | undefined {
  for (const dir of (tools.inherited.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, name);
    if (dir && isExecutable(candidate)) return candidate;
  }
  return undefined;
}

const binaryNames = (program: GoProgram): string[] => program.packages.map((p) => path.basename(p));

/** The program's folder, holding one binary per package: built now (minutes, once per user) when any is missing. */
export function ensureGoProgram(program: GoProgram, tools: ToolEnv, log: (line: string) => void): string {
  const dir = goProgramDir(program, tools);
  if (binaryNames(program).every((b) => isExecutable(path.join(dir, b)))) return dir;
  const targets = program.packages.map((p) => `${program.module}/${p}@${program.version}`);
  const go = onPath('go', tools);
  if (!go)
    throw new Error(
      `${program.label} is needed and is built from its Go module: install Go (https://go.dev/dl/, 1.25 or later) ` +
        `so it can be built once with \`go install ${targets.join(' ')}\``,
    );
  log(`Building ${program.label} ${program.version} from its Go module (first start only, a few minutes)...`);
  const started = Date.now();
  // Built beside its final place and renamed into it whole: an interrupted build leaves no half-filled folder.
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  const staging = fs.mkdtempSync(`${dir}.building-`);
  try {
    const result = spawnSync(go, ['install', ...targets], {
      env: { ...tools.inherited, GOBIN: staging },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    if (result.status !== 0 || !binaryNames(program).every((b) => isExecutable(path.join(staging, b))))
      throw new Error(`\`go install ${targets.join(' ')}\` failed (exit ${String(result.status)}); see the Go output above`);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.renameSync(staging, dir);
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
  log(`Built ${program.label} in ${Math.round((Date.now() - started) / 1000)} s (${dir})`);
  return dir;
}
