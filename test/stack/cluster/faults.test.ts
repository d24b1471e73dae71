import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { TestPollSchema } from '../../../api/v1/run-resources';
import { createDb, type Db } from '../../../db/knex';
import { createApiKey } from '../../../db/repositories/api-keys';
import { DEMO_ORG_ID } from '../../../db/seed';
import type { Form } from '../../../domain/form';
import { call } from '../api/helpers';
import { assertEachBilledOnce, requestLedger } from '../deliberation/helpers';
import { untilEnded } from '../runs/helpers';
import { quorumCli } from '../../harness/cli';
import { replayHistories } from '../../harness/histories';
import { startCluster, type RunningCluster } from '../../harness/cluster';
import { exitOf, pause, until } from '../../harness/faults';
import { processEnvFor, startApiProcess } from '../../harness/worker';

/**
 * Issue 30 item 2: the production topology (`npm run start:cluster`: the Temporal server on Postgres, 2 workers, 2
 * APIs) under load while, in turn, a worker is SIGKILLed, an API is SIGKILLed, every worker is replaced one at a time
 * (a rolling deploy) and the Temporal server is SIGKILLed (the supervisor restarts each, as an orchestrator would).
 * Clients call as a careful client does: one Idempotency-Key per call, kept across retries, the next API on a failure.
 * Every call must end answered, each billed exactly once, the test run complete with every question answered once,
 * nothing held, and `quorum audit` clean.
 */

const CLIENTS = 6;
/** Engines slow enough that every fault lands on calls in flight, fast enough for a few hundred calls. */
const SIM_LATENCY = 'fixed:250';
const CALL_DEADLINE_MS = 180_000;
const MODELS: Record<Form, { panel: string; express: string }> = {
  A: { panel: 'quorum-panel', express: 'quorum-express' },
  B: { panel: 'QRM:PANL', express: 'QRM:EXPR' },
};

interface CallRecord {
  form: Form;
  model: string;
  attempts: number;
  /** Why each failed attempt failed: a status, or the connection's error. */
  failures: string[];
  status: number;
  requestId?: string;
  startedAt: number;
  answeredAt: number;
}

/** A chat completion sent until it is answered, by one Idempotency-Key, trying the next API after each failure. */
async function callUntilAnswered(urls: () => string[], form: Form, model: string, key: string, offset: number): Promise<CallRecord> {
  const idempotencyKey = randomUUID();
  const deadline = Date.now() + CALL_DEADLINE_MS;
  const failures: string[] = [];
  const startedAt = Date.now();
  for (let attempt = 0; ; attempt++) {
    const candidates = urls();
    const url = candidates[(offset + attempt) % candidates.length];
    let wait = 250;
    try {
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
        body: JSON.stringify({
          model,
          messages: [{ role: 'user', content: `Why is the sky blue? Compare two explanations. (${idempotencyKey})` }],
        }),
        signal: AbortSignal.timeout(CALL_DEADLINE_MS),
      });
      const body = (await res.json()) as { svc?: { request_id?: string }; error?: { code?: string } };
      if (res.status === 200)
        return {
          form,
          model,
          attempts: attempt + 1,
          failures,
          status: 200,
          requestId: body.svc?.request_id,
          startedAt,
          answeredAt: Date.now(),
        };
      // A call still running elsewhere (409), an outage (5xx): retry as told. Anything else is this call's answer.
      if (res.status !== 409 && res.status < 500)
        return {
          form,
          model,
          attempts: attempt + 1,
          failures: [...failures, `${res.status} ${body.error?.code ?? ''}`],
          status: res.status,
          startedAt,
          answeredAt: Date.now(),
        };
      failures.push(`${res.status} ${body.error?.code ?? ''}`);
      wait = Math.min(Number(res.headers.get('retry-after') ?? 0) * 1000, 2_000) || wait;
    } catch (err) {
      failures.push(err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err));
    }
    if (Date.now() > deadline) throw new Error(`${form} ${model} not answered in ${CALL_DEADLINE_MS} ms: ${failures.join('; ')}`);
    await pause(wait);
  }
}

describe('the production topology under faults (npm run start:cluster)', function () {
  this.timeout(10 * 60_000);
  let cluster: RunningCluster;
  let db: Db;
  let formA: { child: ChildProcess; url: string };
  let key: string;

  before(async () => {
    cluster = await startCluster({
      workers: 2,
      apis: 2,
      env: { QUORUM_SIM_LATENCY: SIM_LATENCY, QUORUM_SHUTDOWN_GRACE_MS: '10000', QUORUM_LOG_LEVEL: 'error' },
    });
    db = createDb(cluster.databaseUrl, 4);
    // The cluster's APIs speak Form B (the default); a Form A API joins the same cluster as a deployment of the other Form would.
    formA = await startApiProcess(
      processEnvFor({ dbUrl: cluster.databaseUrl, temporalAddress: cluster.temporalAddress, namespace: 'default' }, cluster.dataDir, {
        QUORUM_FORM: 'A',
      }),
    );
    // The demo organisation's own key, without the default requests a minute and calls in flight the load would pass.
    key = (await createApiKey(db, { orgId: DEMO_ORG_ID, keyKind: 'live', limits: { requestsPerMinute: 100_000, concurrency: 100 } }))
      .apiKey;
  });
  after(async () => {
    if (formA && formA.child.exitCode === null) {
      const exit = exitOf(formA.child);
      formA.child.kill('SIGTERM');
      await exit;
    }
    await db?.destroy();
    if (cluster) assert.equal(await cluster.stop(), 0, cluster.output());
  });

  it('answers every call once through a worker killed, an API killed, a rolling deploy and a Temporal server restart, under load', async () => {
    const started = Date.now();
    const b = { url: cluster.apiUrls[0] };
    const launched = await call(b, 'POST', '/v1/tests', { key, body: { model: 'DEMO:STRG', questions: { easy: 4, medium: 4 } } });
    assert.equal(launched.status, 200, JSON.stringify(launched.body));
    const runId = launched.body.batch_id as string;

    // The load: each client calls back to back, panel and express in turn, Form B over the cluster's APIs, Form A on its own.
    const records: CallRecord[] = [];
    let loading = true;
    const clients = Array.from({ length: CLIENTS }, async (_, c) => {
      const form: Form = c % 3 === 2 ? 'A' : 'B';
      const urls = (): string[] => (form === 'A' ? [formA.url] : cluster.apiUrls);
      for (let n = 0; loading; n++) {
        const model = n % 2 === 0 ? MODELS[form].panel : MODELS[form].express;
        records.push(await callUntilAnswered(urls, form, model, key, c + n));
      }
    });
    const answered = (): number => records.filter((r) => r.status === 200).length;
    const faultAt: Record<string, number> = {};
    const steady = async (): Promise<void> => {
      const before = answered();
      await until(() => answered() >= before + 8, 60_000, 'calls answered between faults');
    };
    const supervisorSaid = (line: RegExp, what: string): Promise<void> => until(() => line.test(cluster.output()), 90_000, what);

    await steady();
    faultAt.worker = Date.now();
    const [worker] = cluster.workers();
    process.kill(worker, 'SIGKILL');
    await supervisorSaid(/worker \d exited unexpectedly \(SIGKILL\)[\s\S]*worker \d restarted and ready/, 'the killed worker restarted');

    await steady();
    faultAt.api = Date.now();
    const [api] = cluster.apis();
    process.kill(api.pid, 'SIGKILL');
    await supervisorSaid(/api \d exited unexpectedly \(SIGKILL\)[\s\S]*api \d restarted and ready/, 'the killed API restarted');

    await steady();
    faultAt.rollingDeploy = Date.now();
    const before = cluster.workers();
    process.kill(cluster.child.pid ?? 0, 'SIGUSR2');
    await supervisorSaid(/rolling deploy done/, 'the rolling deploy');
    const after = cluster.workers();
    assert.equal(after.length, 2);
    assert.ok(
      after.every((pid) => !before.includes(pid)),
      `every worker replaced: ${before.join(',')} → ${after.join(',')}`,
    );

    await steady();
    faultAt.temporal = Date.now();
    process.kill(cluster.temporalServer() ?? 0, 'SIGKILL');
    await supervisorSaid(/temporal exited unexpectedly \(SIGKILL\)[\s\S]*temporal restarted and ready/, 'the Temporal server restarted');
    await steady();
    loading = false;
    await Promise.all(clients);

    const done = TestPollSchema.parse((await untilEnded(b, key, 'tests', runId, 180_000)).body);

    // Every call answered (some on a retry with their key), each billed exactly once, nothing held.
    const unanswered = records.filter((r) => r.status !== 200);
    assert.deepEqual(unanswered, [], 'every call answered');
    const requestIds = records.map((r) => r.requestId ?? '');
    assert.equal(new Set(requestIds).size, records.length, 'one request per call, whatever its retries');
    await assertEachBilledOnce(DEMO_ORG_ID, requestIds, db);

    // The test run: completed, every question answered once, charged once.
    assert.equal(done.batch.state, 'completed');
    assert.equal(done.batch.progress.done, 8);
    const rows = (await db('run_questions').where({ run_id: runId }).select('question_id')) as { question_id: string }[];
    assert.equal(rows.length, 8);
    assert.equal(new Set(rows.map((r) => r.question_id)).size, 8);
    assert.deepEqual(
      (await requestLedger(DEMO_ORG_ID, runId, db)).map((e) => e.kind),
      ['test_run_charge'],
    );

    const audit = await quorumCli(['audit', '--json'], cluster.dataDir, {
      DATABASE_URL: cluster.databaseUrl,
      TEMPORAL_ADDRESS: cluster.temporalAddress,
      TEMPORAL_NAMESPACE: 'default',
    });
    assert.equal(audit.code, 0, audit.stdout + audit.stderr);
    assert.deepEqual(JSON.parse(audit.stdout), { ok: true, temporal_checked: true, violations: [] });

    // Every workflow the faults crossed replays from its history against today's code, as a worker that lost it from
    // its cache (a restart, a deploy) must (issue 55): the audit's workflow_task_failing finds what fails live.
    const connection = await Connection.connect({ address: cluster.temporalAddress });
    try {
      const client = new Client({ connection, namespace: 'default' });
      const { replayed, failures } = await replayHistories(client.workflow.list({ query: `QuorumOrg = '${DEMO_ORG_ID}'` }).intoHistories());
      assert.deepEqual(failures, [], `${failures.length} of ${replayed} histories did not replay`);
      assert.ok(replayed >= records.length, `${replayed} histories replayed for ${records.length} calls`);
    } finally {
      await connection.close();
    }

    // The figures the issue asks for: calls, retries, the longest stall (no call answered) and where it fell.
    const times = records.map((r) => r.answeredAt).sort((x, y) => x - y);
    let stall = { ms: 0, endedAt: 0 };
    for (let i = 1; i < times.length; i++)
      if (times[i] - times[i - 1] > stall.ms) stall = { ms: times[i] - times[i - 1], endedAt: times[i] };
    const after_ = (at: number): string =>
      Object.entries(faultAt)
        .filter(([, t]) => t <= at)
        .map(([name, t]) => `${name} +${((at - t) / 1000).toFixed(1)} s`)
        .pop() ?? 'before any fault';
    const retried = records.filter((r) => r.attempts > 1);
    const slowest = records.reduce((a, r) => (r.answeredAt - r.startedAt > a.answeredAt - a.startedAt ? r : a));
    console.log(
      `      cluster faults: ${records.length} calls (${records.filter((r) => r.form === 'A').length} Form A), ` +
        `${retried.length} answered on a retry (${retried.reduce((n, r) => n + r.attempts - 1, 0)} retries: ` +
        `${[...new Set(retried.flatMap((r) => r.failures))].slice(0, 6).join('; ')}), longest stall ${(stall.ms / 1000).toFixed(1)} s ` +
        `(ended ${after_(stall.endedAt)}), slowest call ${((slowest.answeredAt - slowest.startedAt) / 1000).toFixed(1)} s ` +
        `(${slowest.model}, ${slowest.attempts} attempt(s), answered ${after_(slowest.answeredAt)}); test run 8/8 answered; ${((Date.now() - started) / 1000).toFixed(0)} s`,
    );
  });
});
