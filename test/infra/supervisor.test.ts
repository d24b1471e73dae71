import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DEMO_ORG_ID } from '../../db/seed';
import { workflowIds } from '../../domain/workflow-ids';
import { freePort } from '../../infra/free-port';
import { stack } from '../harness/stack';

const root = path.join(__dirname, '..', '..');

interface Started {
  child: ChildProcess;
  output: () => string;
}

/** `npm start`'s own entry point (the compiled supervisor), with its state in a scratch folder and every port free. */
async function startSupervisor(env: NodeJS.ProcessEnv): Promise<Started> {
  const child = spawn(process.execPath, [path.join(root, 'dist/infra/supervisor.js')], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`supervisor not ready in 120 s:\n${out}`)), 120_000);
    const check = (): void => {
      if (/\[quorum\] ready in/.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`supervisor exited (${String(code)}) before ready:\n${out}`));
    });
  });
  return { child, output: () => out };
}

async function stopWithSigint(s: Started): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => s.child.once('exit', (code) => resolve(code)));
  s.child.kill('SIGINT');
  return exited;
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Processes whose command line mentions our scratch folder (Postgres, Temporal) or our ports. */
function processesMentioning(needle: string): string[] {
  const found: string[] = [];
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmd.includes(needle)) found.push(`${pid}: ${cmd}`);
    } catch {
      // the process ended while we looked
    }
  }
  return found;
}

async function describeTrialTimer(temporalPort: number): Promise<{ status: string; runId: string }> {
  const connection = await Connection.connect({ address: `127.0.0.1:${temporalPort}` });
  try {
    const d = await new Client({ connection }).workflow.getHandle(workflowIds.trialCredit(DEMO_ORG_ID)).describe();
    return { status: d.status.name, runId: d.runId };
  } finally {
    await connection.close();
  }
}

describe('npm start: the supervisor', function () {
  this.timeout(300_000);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-start-'));
  // `npm start` runs `npm run build` first; so does this suite, then runs what it built.
  before(() =>
    execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' }),
  );
  after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('brings the stack up healthy with the Temporal UI, and Ctrl-C leaves nothing running; a second start reuses the data', async () => {
    const ports = { PORT: await freePort(), TEMPORAL_PORT: await freePort(), TEMPORAL_UI_PORT: await freePort() };
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      QUORUM_DATA_DIR: dataDir,
      TEMPORAL_CLI_PATH: stack().temporalBinary,
      PORT: String(ports.PORT),
      TEMPORAL_PORT: String(ports.TEMPORAL_PORT),
      TEMPORAL_UI_PORT: String(ports.TEMPORAL_UI_PORT),
    };
    delete env.DATABASE_URL;
    delete env.TEMPORAL_ADDRESS;

    const trialRunIds: string[] = [];
    for (const round of [1, 2]) {
      const s = await startSupervisor(env);
      const health = await fetch(`http://127.0.0.1:${ports.PORT}/healthz`);
      assert.equal(health.status, 200, await health.text());
      const ui = await fetch(`http://127.0.0.1:${ports.TEMPORAL_UI_PORT}/`);
      assert.equal(ui.status, 200);
      assert.match(s.output(), new RegExp(`Temporal UI +http://127\\.0\\.0\\.1:${ports.TEMPORAL_UI_PORT}`));
      if (round === 2) assert.match(s.output(), /0 migration\(s\) applied/, 'the second start must reuse the migrated database');
      // The supervisor, not the seed, starts the demo organisation's trial timer, once: the second start keeps it.
      const trial = await describeTrialTimer(ports.TEMPORAL_PORT);
      assert.equal(trial.status, 'RUNNING');
      trialRunIds.push(trial.runId);

      assert.equal(await stopWithSigint(s), 0, s.output());
      for (const port of Object.values(ports)) assert.equal(await portOpen(port), false, `port ${port} still bound after Ctrl-C`);
      assert.deepEqual(processesMentioning(dataDir), []);
      assert.equal(fs.existsSync(path.join(dataDir, 'stack.json')), false);
    }
    assert.equal(trialRunIds[1], trialRunIds[0], 'the demo trial timer must not be started twice');
    assert.ok(fs.existsSync(path.join(dataDir, 'pg', 'PG_VERSION')));
    assert.ok(fs.existsSync(path.join(dataDir, 'temporal.db')));
  });
});
