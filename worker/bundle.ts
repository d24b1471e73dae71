import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runtimeExecArgv } from '../infra/paths';

/**
 * Builds the workflow bundle into a file. The worker loads that file instead of bundling in its own process,
 * which keeps webpack (~140 MB resident) out of a long-running worker. The image builds it once
 * (`QUORUM_WORKFLOW_BUNDLE`); otherwise the worker runs this in a short-lived child at start.
 */
export async function writeWorkflowBundle(out: string): Promise<void> {
  // Loaded here, in the child only: the supervisor imports this file for bundleInChild, and the worker's modules
  // (the SDK, activities, engines, the tokenizer) would otherwise stay resident in it, ~45 MB of heap it never uses.
  const { workflowBundle } = await import('./workers.js');
  const { code } = await workflowBundle();
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, code);
}

/** Runs the bundler in a child process and returns the bundle's path. */
export function bundleInChild(): string {
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-bundle-')), 'workflow-bundle.js');
  execFileSync(process.execPath, [...runtimeExecArgv, __filename, out], { stdio: ['ignore', 'ignore', 'inherit'] });
  return out;
}

if (require.main === module) {
  const out = process.argv[2];
  if (!out) {
    process.stderr.write('usage: node dist/worker/bundle.js OUT_FILE (or node --import tsx worker/bundle.ts OUT_FILE)\n');
    process.exit(2);
  }
  writeWorkflowBundle(out).catch((err: unknown) => {
    process.stderr.write(`bundling failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
