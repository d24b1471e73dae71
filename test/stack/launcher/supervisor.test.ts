import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { createDb } from '../../../db/knex';
import { getBalance } from '../../../db/repositories/ledger';
import { DEMO_ORG_ID } from '../../../db/seed';
import { workflowIds } from '../../../domain/workflow-ids';
import { freePort } from '../../../infra/free-port';
import { engineCallsOut, exitOf, listProcesses, portOpen, until } from '../../harness/faults';
import { chargeCount, ledgerSum } from '../deliberation/helpers';
import { buildOnce } from '../../harness/build';
import { endStacksAfterEachTest, startSupervisor, startThroughNpm, type StartedSupervisor } from '../../harness/supervisor';
import { stack } from '../../harness/stack';

type Started = StartedSupervisor;

/** Ctrl-C in the supervisor's terminal: SIGINT to its process group. */
async function ctrlC(s: Started): Promise<number | null> {
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

/** A client of the supervised stack's Temporal server, for `work` only. */
async function withTemporal<T>(port: number, work: (client: Client) => Promise<T>): Promise<T> {
  const connection = await Connection.connect({ address: `127.0.0.1:${port}` });
  try {
    return await work(new Client({ connection }));
  } finally {
    await connection.close();
  }
}

async function describeTrialTimer(temporalPort: number): Promise<{ status: string; runId: string }> {
  const d = await withTemporal(temporalPort, (client) => client.workflow.getHandle(workflowIds.trialCredit(DEMO_ORG_ID)).describe());
  return { status: d.status.name, runId: d.runId };
}

type Ports = Record<'PORT' | 'TEMPORAL_PORT' | 'TEMPORAL_UI_PORT', number>;

/** A supervisor's environment: its state in `dataDir`, every port free, the embedded Postgres and dev server. */
async function supervisorEnv(dataDir: string, extra: NodeJS.ProcessEnv = {}): Promise<{ env: NodeJS.ProcessEnv; ports: Ports }> {
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
function demoKey(s: Started): string {
  const key = /its live API key, shown this once: (\S+)/.exec(s.output())?.[1];
  assert.ok(key, s.output());
  return key;
}

type Reply = { status: number; content?: string; retryAfter?: number };

/**
 * A panel call to the supervised API under the demo key, resolved with its status and answer; returns once the
 * deliberation's engine calls are running (so the next step lands mid-call), with `again` to send the same call
 * (same Idempotency-Key) once more.
 */
async function callInFlight(s: Started, ports: Ports): Promise<{ answer: Promise<Reply>; again: () => Promise<Reply> }> {
  const idempotencyKey = randomUUID();
  const send = (): Promise<Reply> =>
    fetch(`http://127.0.0.1:${ports.PORT}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${demoKey(s)}`, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
      body: JSON.stringify({
        model: 'QRM:PANL',
        messages: [{ role: 'user', content: 'Why is the sky blue? Compare Rayleigh and Mie scattering.' }],
      }),
    }).then(async (res) => {
      const body = (await res.json()) as { choices?: { message: { content: string } }[] };
      return { status: res.status, content: body.choices?.[0]?.message.content, retryAfter: Number(res.headers.get('retry-after') ?? 0) };
    });
  const answer = send();
  const workflowId = workflowIds.deliberation(DEMO_ORG_ID, idempotencyKey);
  await withTemporal(ports.TEMPORAL_PORT, (client) => until(() => engineCallsOut(client, workflowId), 30_000, 'engine calls running'));
  // Wrapped: an async function returning the promise itself would wait for it.
  return { answer, again: send };
}

/** Ids of the supervisor's children running `module` (`worker/main`, `api/main`). */
function supervised(supervisor: Started, module: string): number[] {
  return listProcesses()
    .filter((p) => p.ppid === supervisor.child.pid && p.cmd.includes(`dist/${module}.js`))
    .map((p) => p.pid);
}

async function healthy(apiUrl: string): Promise<boolean> {
  try {
    return (await fetch(`${apiUrl}/healthz`)).ok;
  } catch {
    return false;
  }
}

/** Nothing of this stack left: its ports free and no process naming its folder. */
async function assertGone(ports: Ports, dataDir: string): Promise<void> {
  for (const port of Object.values(ports)) assert.equal(await portOpen(port), false, `port ${port} still bound`);
  assert.deepEqual(processesMentioning(dataDir), []);
  assert.equal(fs.existsSync(path.join(dataDir, 'stack.json')), false);
}

/** Every process descending from `pid` (not `pid` itself), as the process table shows them now. */
function descendantsOf(pid: number): number[] {
  const all = listProcesses();
  const found: number[] = [];
  for (let parents = [pid]; parents.length > 0;) {
    parents = all.filter((p) => parents.includes(p.ppid)).map((p) => p.pid);
    found.push(...parents);
  }
  return found;
}

describe('npm start: the supervisor', function () {
  this.timeout(300_000);
  // `npm start` runs `npm run build` first; so does this suite, then runs what it built.
  before(buildOnce);
  // Whatever a test started ends with it, passed, failed or timed out (mocha's timeout runs afterEach, never the rest
  // of the test): every process of its stacks killed, then every folder of the suite removed (again each time: a
  // stack a timed-out test started late may have made its folder anew before it was ended).
  endStacksAfterEachTest();
  const folders: string[] = [];
  const scratchDir = (prefix: string): string => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    folders.push(dir);
    return dir;
  };
  afterEach('remove the folders', () => {
    for (const dir of folders) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('brings the stack up healthy with the Temporal UI; Ctrl-C during a call delivers its answer, then leaves nothing running; a second start reuses the data', async () => {
    const dataDir = scratchDir('quorum-start-');
    // Engines slow enough for Ctrl-C to land mid-call.
    const { env, ports } = await supervisorEnv(dataDir, { QUORUM_SIM_LATENCY: 'fixed:1500' });
    const trialRunIds: string[] = [];
    for (const round of [1, 2]) {
      // The second start as a user runs it, through npm: one Ctrl-C reaches both npm and the supervisor, and npm
      // passes its copy on, yet it is one graceful stop.
      const s = round === 1 ? await startSupervisor(env) : await startThroughNpm(env);
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

      if (round === 1) {
        // The children are not in the terminal's process group: the supervisor stops the API first, which drains
        // while its worker and Temporal still serve the call.
        const { answer } = await callInFlight(s, ports);
        assert.equal(await ctrlC(s), 0, s.output());
        const { status, content } = await answer;
        assert.equal(status, 200, s.output());
        assert.ok(content);
      } else {
        assert.equal(await ctrlC(s), 0, s.output());
      }
      await assertGone(ports, dataDir);
    }
    assert.equal(trialRunIds[1], trialRunIds[0], 'the demo trial timer must not be started twice');
    assert.ok(fs.existsSync(path.join(dataDir, 'pg', 'PG_VERSION')));
    assert.ok(fs.existsSync(path.join(dataDir, 'temporal.db')));
  });

  it('restarts the killed API with its worker: the call cut off, retried with its key, is answered and billed once; after 5 API crashes in a minute it stops the stack, exit 1', async () => {
    const healDir = scratchDir('quorum-heal-');
    // Engines slow enough for the process to die with the seats' calls out.
    const { env, ports } = await supervisorEnv(healDir, { QUORUM_SIM_LATENCY: 'fixed:1500' });
    const s = await startSupervisor(env);
    const apiUrl = `http://127.0.0.1:${ports.PORT}`;
    // `npm start` runs the worker inside the API's process (QUORUM_ROLE=all): no worker process of its own.
    assert.deepEqual(supervised(s, 'worker/main'), []);
    const { answer, again } = await callInFlight(s, ports);
    const [api] = supervised(s, 'api/main');
    process.kill(api, 'SIGKILL');
    await assert.rejects(answer, 'the call in flight is cut off with its process');
    await until(() => /api restarted and ready/.test(s.output()), 30_000, 'the API restarted');
    assert.match(s.output(), /api exited unexpectedly \(SIGKILL\); restarting it in 0\.5 s/);
    // The deliberation went on in Temporal: the same key answers it. While it still runs each retry is a 409 that
    // changes nothing; its Retry-After (up to the call's whole typical length, ~30 s, when the server holds the
    // progress query past the crash) is an upper bound, so poll at most every 2 s, for up to two minutes.
    const deadline = Date.now() + 120_000;
    let reply = await again();
    while (reply.status === 409 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(reply.retryAfter ?? 1, 2) * 1000));
      reply = await again();
    }
    assert.equal(reply.status, 200, s.output());
    assert.ok(reply.content);

    // The ledger after the crash: one charge, nothing still held, the entries summing to the balance.
    const { databaseUrl } = JSON.parse(fs.readFileSync(path.join(healDir, 'stack.json'), 'utf8')) as { databaseUrl: string };
    const db = createDb(databaseUrl, 1);
    try {
      assert.equal(await chargeCount(DEMO_ORG_ID, db), 1);
      const balance = await getBalance(db, DEMO_ORG_ID);
      assert.equal(balance.reservedMicros, 0n);
      assert.equal(await ledgerSum(DEMO_ORG_ID, db), balance.balanceMicros);
    } finally {
      await db.destroy();
    }

    // Killed again and again: the fifth crash within a minute ends the stack.
    const exit = exitOf(s.child);
    // The kill above was the first crash.
    for (let crash = 2; crash <= 5; crash++) {
      const [api] = supervised(s, 'api/main');
      process.kill(api, 'SIGKILL');
      if (crash === 5) break;
      await until(
        async () => supervised(s, 'api/main').some((pid) => pid !== api) && (await healthy(apiUrl)),
        30_000,
        `the API back after crash ${crash}`,
      );
    }
    assert.equal((await exit).code, 1, s.output());
    assert.match(s.output(), /api exited unexpectedly \(SIGKILL\); restarting it in 0\.5 s/);
    assert.match(s.output(), /api crashed 5 times within 60 s \(last: SIGKILL\); giving up, stopping the stack/);
    await assertGone(ports, healDir);
  });

  it('QUORUM_LOCAL_MODEL=on: the demo answers with the real local model (seat, judge and synthesis), labelled so; Ctrl-C stops the model server too', async () => {
    const localDir = scratchDir('quorum-start-local-');
    const { env, ports } = await supervisorEnv(localDir, { QUORUM_LOCAL_MODEL: 'on' });
    const s = await startSupervisor(env);
    const modelUrl = /local model ready at (http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(s.output())?.[1];
    assert.ok(modelUrl, s.output());
    const key = demoKey(s);
    const ask = async (model: string, content: string): Promise<{ content: string; svc: Record<string, unknown> }> => {
      const res = await fetch(`http://127.0.0.1:${ports.PORT}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages: [{ role: 'user', content }] }),
      });
      const body = (await res.json()) as { choices: { message: { content: string } }[]; svc: Record<string, unknown> };
      assert.equal(res.status, 200, JSON.stringify(body));
      return { content: body.choices[0]?.message.content ?? '', svc: body.svc };
    };
    const express = await ask('QRM:EXPR', 'Name one planet of the solar system.');
    assert.ok(express.content.trim().length > 0);
    assert.doesNotMatch(express.content, /simulated/i);
    // A prompt the classifier sends to the panel lane.
    const panel = await ask('QRM:PANL', 'Why is the sky blue? Compare Rayleigh and Mie scattering, step by step.');
    const receipt = await fetch(`http://127.0.0.1:${ports.PORT}/v1/receipts/${String(panel.svc.request_id)}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    const r = (await receipt.json()) as { receipt: { seats: { model_used: string }[] } };
    assert.ok(r.receipt.seats.length >= 2, JSON.stringify(r));
    assert.deepEqual([...new Set(r.receipt.seats.map((x) => x.model_used))], ['local/smollm2'], 'every seat on the local model');
    assert.equal(panel.svc.best_seat_judged_by, 'llm', 'the local model judged, and its verdict was read');
    // The local panel (issues 39 and 52): seats on the one model, tuned apart, answer differently; they vote, two
    // first and the third only when those two do not state one answer (an open question states none).
    const local = await ask('DEMO:LOCL', 'Give one reason why the sky looks blue.');
    const tuned = await fetch(`http://127.0.0.1:${ports.PORT}/v1/receipts/${String(local.svc.request_id)}?include_transcript=true`, {
      headers: { authorization: `Bearer ${key}` },
    });
    const seats = ((await tuned.json()) as { receipt: { seats: { model_used: string; content: string; tuning: unknown }[] } }).receipt
      .seats;
    const aggregation = local.svc.aggregation as { method: string; seats_asked: number; early_stop: boolean } | null;
    assert.equal(aggregation?.method, 'vote', JSON.stringify(local.svc));
    assert.equal(seats.length, aggregation.seats_asked, JSON.stringify(seats));
    assert.equal(aggregation.early_stop, aggregation.seats_asked === 2);
    assert.deepEqual([...new Set(seats.map((x) => x.model_used))], ['local/smollm2']);
    assert.deepEqual(
      seats.map((x) => (x.tuning as { seed: number }).seed).sort((a, b) => a - b),
      [11, 23, 37].slice(0, seats.length),
      'each seat asked with its own settings, shown in the receipt',
    );
    if (seats.length === 3)
      assert.ok(
        new Set(seats.map((x) => x.content.trim())).size >= 2,
        `the seats answered alike: ${JSON.stringify(seats.map((x) => x.content))}`,
      );
    assert.equal(await ctrlC(s), 0, s.output());
    assert.equal(await healthy(modelUrl), false, 'the model server stopped with the stack');
    await assertGone(ports, localDir);
  }).timeout(480_000); // Three panel calls on a real model on two cores: minutes, more under load.
  // As a process manager (systemd, a container runtime, pm2) stops it: the signal to npm's own pid only, not to its
  // process group as a terminal's Ctrl-C sends it. npm passes it to its script's process, which must be the supervisor.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`${signal} to npm start's own pid stops the whole stack gracefully: exit 0, no process left, no port bound`, async () => {
      const signalDir = scratchDir(`quorum-${signal.toLowerCase()}-`);
      const { env, ports } = await supervisorEnv(signalDir);
      const s = await startThroughNpm(env);
      const npmPid = s.child.pid ?? 0;
      const health = await fetch(`http://127.0.0.1:${ports.PORT}/healthz`);
      assert.equal(health.status, 200, await health.text());
      const stackPids = descendantsOf(npmPid);
      // Postgres runs under pg_ctl, outside this tree: assertGone finds it by its data folder.
      assert.ok(stackPids.length >= 3, `the supervisor, Temporal and the API: ${JSON.stringify(stackPids)}`);

      const exited = exitOf(s.child);
      process.kill(npmPid, signal);
      const { code } = await exited;
      assert.equal(code, 0, s.output());
      assert.match(s.output(), /\[quorum\] stopped/);
      assert.doesNotMatch(s.output(), /parent process ended/, 'the supervisor got the signal itself (not its parent going away)');
      const left = listProcesses().filter((p) => stackPids.includes(p.pid));
      assert.deepEqual(left, [], 'processes of the stack still running');
      await assertGone(ports, signalDir);
    });
  }
});
