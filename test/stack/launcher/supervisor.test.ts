import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { createDb } from '../../../db/knex';
import { getBalance } from '../../../db/repositories/ledger';
import { DEMO_ORG_ID } from '../../../db/seed';
import { workflowIds } from '../../../domain/workflow-ids';
import { engineCallsOut, exitOf, listProcesses, until } from '../../harness/faults';
import { chargeCount, ledgerSum } from '../deliberation/helpers';
import { startSupervisor, startThroughNpm, type StartedSupervisor } from '../../harness/supervisor';
import { assertGone, ctrlC, demoKey, healthy, launcherSuite, supervisorEnv, type Ports } from './helpers';

type Started = StartedSupervisor;

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
  const scratchDir = launcherSuite();

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
