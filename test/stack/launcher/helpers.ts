import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../../infra/free-port';
import { buildOnce } from '../../harness/build';
import { exitOf, listProcesses, portOpen } from '../../harness/faults';
import { endStacksAfterEachTest, type StartedSupervisor } from '../../harness/supervisor';
import { stack } from '../../harness/stack';

/**
 * What the launcher's test files share: a suite's setup (the build `npm start` runs, every stack ended and every
 * scratch folder removed after each test), the supervisor's environment, and how a stack is stopped and found gone.
 */

/**
 * In a `describe`: `npm start` runs `npm run build` first, so the suite builds once, then runs what it built. Whatever a
 * test started ends with it, passed, failed or timed out (mocha's timeout runs afterEach, never the rest of the test):
 * every process of its stacks killed, then every folder of the suite removed (again each time: a stack a timed-out
 * test started late may have made its folder anew before it was ended). Returns the maker of scratch folders.
 */
export function launcherSuite(): (prefix: string) => string {
  before(buildOnce);
  endStacksAfterEachTest();
  const folders: string[] = [];
  afterEach('remove the folders', () => {
    for (const dir of folders) fs.rmSync(dir, { recursive: true, force: true });
  });
  return (prefix) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    folders.push(dir);
    return dir;
  };
}

/** Ctrl-C in the supervisor's terminal: SIGINT to its process group. */
export async function ctrlC(s: StartedSupervisor): Promise<number | null> {
  const exited = exitOf(s.child);
  process.kill(-(s.child.pid ?? 0), 'SIGINT');
  return (await exited).code;
}

/** Processes whose command line mentions our scratch folder (Postgres, Temporal) or our ports. */
function processesMentioning(needle: string): string[] {
  return listProcesses()
    .filter((p) => p.cmd.includes(needle))
    .map((p) => `${p.pid}: ${p.cmd}`);
}

export type Ports = Record<'PORT' | 'TEMPORAL_PORT' | 'TEMPORAL_UI_PORT', number>;

/** A supervisor's environment: its state in `dataDir`, every port free, the embedded Postgres and dev server. */
export async function supervisorEnv(dataDir: string, extra: NodeJS.ProcessEnv = {}): Promise<{ env: NodeJS.ProcessEnv; ports: Ports }> {
  const ports: Ports = { PORT: await freePort(), TEMPORAL_PORT: await freePort(), TEMPORAL_UI_PORT: await freePort() };
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    QUORUM_DATA_DIR: dataDir,
    TEMPORAL_CLI_PATH: stack().temporalBinary,
    PORT: String(ports.PORT),
    TEMPORAL_PORT: String(ports.TEMPORAL_PORT),
    TEMPORAL_UI_PORT: String(ports.TEMPORAL_UI_PORT),
    ...extra,
  };
  delete env.DATABASE_URL;
  delete env.TEMPORAL_ADDRESS;
  return { env, ports };
}

/** The demo organisation's live key, printed on a first start. */
export function demoKey(s: StartedSupervisor): string {
  const key = /its live API key, shown this once: (\S+)/.exec(s.output())?.[1];
  assert.ok(key, s.output());
  return key;
}

export async function healthy(apiUrl: string): Promise<boolean> {
  try {
    return (await fetch(`${apiUrl}/healthz`)).ok;
  } catch {
    return false;
  }
}

/** Nothing of this stack left: its ports free and no process naming its folder. */
export async function assertGone(ports: Ports, dataDir: string): Promise<void> {
  for (const port of Object.values(ports)) assert.equal(await portOpen(port), false, `port ${port} still bound`);
  assert.deepEqual(processesMentioning(dataDir), []);
  assert.equal(fs.existsSync(path.join(dataDir, 'stack.json')), false);
}
