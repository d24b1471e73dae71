import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, CreateTaskResultSchema, type CallToolResult, type Task } from '@modelcontextprotocol/sdk/types.js';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { getBalance } from '../../../db/repositories/ledger';
import { OPENAI_TEST_KEY, startOpenAiLoopback, type Loopback, type RecordedRequest } from '../../fixtures/providers';
import { exitOf, until } from '../../harness/faults';
import { stack } from '../../harness/stack';
import { stackProcessEnv, startApiProcess } from '../../harness/worker';
import { FORMS, moneySnapshot, newKey, newOrg, PANEL, startApi, type Api, type TestOrg } from '../api/helpers';
import { assertEachBilledOnce, customMode, startProductWorkers } from '../deliberation/helpers';
import { isStaff, modelOf, script, servedBill, SLOW_SEAT_MS, slowSeatPanel } from '../api/slow-seat';
import { demoModes } from '../runs/helpers';
import { connect, json } from './helpers';

/**
 * MCP tasks (issue 40 item 5, protocol 2025-11-25) through the official SDK client: `deliberate`, `run_test` and
 * `certify_mode` called as tasks answer a task id at once; `tasks/get` follows the work, `tasks/result` is what the
 * plain call returns, `tasks/cancel` stops it; another organisation finds no such task.
 */
/** Engine steps of 2 s: a deliberation works long enough for a few polls of its task. */
const ENGINE_MS = 2_000;
const question = (): { role: string; content: string }[] => [
  { role: 'user', content: `Compare two approaches to caching and explain the trade-offs, step by step. Why? ${randomUUID()}` },
];

/** A task-augmented tools/call, as the SDK sends one: the CreateTaskResult, and how long it took to come. */
export async function callAsTask(
  client: Client,
  name: string,
  args: Record<string, unknown>,
  ttl = 600_000,
): Promise<{ task: Task; ms: number }> {
  const t0 = Date.now();
  const { task } = await client.request({ method: 'tools/call', params: { name, arguments: args } }, CreateTaskResultSchema, {
    task: { ttl },
  });
  return { task, ms: Date.now() - t0 };
}

/** Polls `tasks/get` at the task's interval until it ends; every status message seen on the way. */
export async function pollToEnd(client: Client, taskId: string, timeoutMs = 90_000): Promise<{ task: Task; messages: string[] }> {
  const messages: string[] = [];
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline;) {
    const task = await client.experimental.tasks.getTask(taskId);
    if (task.statusMessage && messages.at(-1) !== task.statusMessage) messages.push(task.statusMessage);
    if (['completed', 'failed', 'cancelled'].includes(task.status)) return { task, messages };
    await new Promise((resolve) => setTimeout(resolve, task.pollInterval ?? 1_000));
  }
  throw new Error(`task ${taskId} still working after ${timeoutMs} ms`);
}

export async function resultOf(client: Client, taskId: string): Promise<CallToolResult> {
  return client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
}

const keysOf = (o: unknown): string[] => Object.keys(o as object).sort();

describe('mcp tasks: deliberate, run_test and certify_mode as tasks, with the official SDK client', function () {
  this.timeout(180_000);
  const apis = {} as Record<'A' | 'B', Api>;
  let workers: { stop(): Promise<void> };
  let org: TestOrg;
  let stranger: TestOrg;

  before(async () => {
    workers = await startProductWorkers({ QUORUM_SIM_LATENCY: `fixed:${ENGINE_MS}` });
    for (const form of FORMS) apis[form] = await startApi(form, { runs: { testsPerDay: 20, certificationsPerDay: 3, window: 4 } });
    [org, stranger] = await Promise.all([newOrg(50), newOrg(50)]);
  });
  after(async () => {
    for (const form of FORMS) await apis[form].close();
    await workers.stop();
  });

  it('initialize advertises tasks (tools/call, get, list, cancel); tools/list offers exactly the three as optional tasks', async () => {
    const client = await connect(apis.B, org.ownerKey);
    assert.deepEqual(client.getServerCapabilities()?.tasks, { list: {}, cancel: {}, requests: { tools: { call: {} } } });
    const { tools } = await client.listTools();
    const asTasks = tools.filter((t) => t.execution?.taskSupport === 'optional').map((t) => t.name);
    assert.deepEqual(asTasks.sort(), ['certify_mode', 'deliberate', 'run_test']);
    assert.ok(tools.filter((t) => !asTasks.includes(t.name)).every((t) => t.execution === undefined));
    // A tool not offered as a task: Method not found (-32601), as the spec says.
    await assert.rejects(
      callAsTask(client, 'estimate', { model: PANEL.B, messages: question() }),
      (err: { code?: number }) => err.code === -32601,
    );
    await client.close();
  });

  for (const form of FORMS) {
    it(`Form ${form}: deliberate as a task answers a task id at once, polls to completed, and tasks/result is the plain call's result, billed once`, async () => {
      const own = await newOrg(50);
      const client = await connect(apis[form], own.ownerKey);
      const messages = question();
      const { task, ms } = await callAsTask(client, 'deliberate', { model: PANEL[form], messages }, 120_000);
      // At once: before the first engine step could have ended.
      assert.ok(ms < ENGINE_MS, `created in ${ms} ms`);
      assert.equal(task.status, 'working');
      assert.match(task.taskId, /^task_[0-9a-f]{32}$/);
      assert.equal(task.ttl, 120_000);
      assert.equal(task.pollInterval, 2_000);

      const { task: ended, messages: seen } = await pollToEnd(client, task.taskId);
      assert.equal(ended.status, 'completed', JSON.stringify(ended));
      // tasks/get said where the deliberation was, in the words of the plain call's progress notifications.
      assert.ok(
        seen.some((m) => /seats answering: \d\/3|critique round \d|judged round \d|synthesising/.test(m)),
        JSON.stringify(seen),
      );
      const result = await resultOf(client, task.taskId);
      assert.equal(result.isError, undefined);
      assert.deepEqual(result._meta?.['io.modelcontextprotocol/related-task'], { taskId: task.taskId });
      const body = json(result) as {
        object: string;
        model: string;
        choices: { message: { content: string } }[];
        svc: { request_id: string };
      };
      assert.deepEqual(result.structuredContent, body);
      assert.ok(body.choices[0].message.content.length > 0);

      // The plain call of another question has the same shape, field for field.
      const plain = json(await client.callTool({ name: 'deliberate', arguments: { model: PANEL[form], messages: question() } }));
      assert.deepEqual(keysOf(body), keysOf(plain));
      assert.deepEqual(keysOf(body.svc), keysOf(plain.svc));
      assert.equal(body.model, plain.model);
      // The same question asked plainly is the same call: replayed, not billed again.
      const again = json(await client.callTool({ name: 'deliberate', arguments: { model: PANEL[form], messages } }));
      assert.equal((again.svc as { request_id: string }).request_id, body.svc.request_id);
      // The organisation's billed calls: the task's and the other question's, each once.
      await assertEachBilledOnce(own.orgId, [body.svc.request_id, (plain.svc as { request_id: string }).request_id].sort());
      // A second read gives the same result.
      assert.deepEqual(json(await resultOf(client, task.taskId)), body);
      // The answer is kept once, on its receipt: the task row holds no copy of it.
      const row = (await stack().db('mcp_tasks').where({ task_id: task.taskId }).first('result')) as { result: unknown };
      assert.equal(row.result, null);
      // The same question as a task once more replays the stored answer, exactly as the plain call's replay.
      const { task: replay } = await callAsTask(client, 'deliberate', { model: PANEL[form], messages });
      assert.equal(replay.status, 'working');
      assert.equal((await pollToEnd(client, replay.taskId)).task.status, 'completed');
      assert.deepEqual(json(await resultOf(client, replay.taskId)), again);
      await assertEachBilledOnce(own.orgId, [body.svc.request_id, (plain.svc as { request_id: string }).request_id].sort());
      await client.close();
    });
  }

  it("another organisation's key finds no such task (tasks/get, tasks/result, tasks/cancel, tasks/list); another key of the organisation needs the tool's scope", async () => {
    const mine = await connect(apis.B, org.ownerKey);
    const { task } = await callAsTask(mine, 'deliberate', { model: PANEL.B, messages: question() });
    const theirs = await connect(apis.B, stranger.ownerKey);
    const notFound = (err: { code?: number; message?: string }): boolean => err.code === -32602 && /not found/i.test(err.message ?? '');
    await assert.rejects(theirs.experimental.tasks.getTask(task.taskId), notFound);
    await assert.rejects(resultOf(theirs, task.taskId), notFound);
    await assert.rejects(theirs.experimental.tasks.cancelTask(task.taskId), notFound);
    assert.ok(!(await theirs.experimental.tasks.listTasks()).tasks.some((t) => t.taskId === task.taskId));
    assert.ok((await mine.experimental.tasks.listTasks()).tasks.some((t) => t.taskId === task.taskId));
    // Within the organisation, another key reads it only with the tool's scope.
    const colleague = await connect(apis.B, await newKey(org.orgId, { scopes: ['completions'] }));
    assert.equal((await colleague.experimental.tasks.getTask(task.taskId)).taskId, task.taskId);
    const unscoped = await connect(apis.B, await newKey(org.orgId, { scopes: ['models'] }));
    await assert.rejects(
      unscoped.experimental.tasks.getTask(task.taskId),
      (err: { code?: number; message?: string }) => err.code === -32602 && /completions/.test(err.message ?? ''),
    );
    await Promise.all([colleague.close(), unscoped.close()]);
    // Untouched by the stranger's cancel: it still ends by itself.
    assert.equal((await pollToEnd(mine, task.taskId)).task.status, 'completed');
    await Promise.all([mine.close(), theirs.close()]);
  });

  it("run_test as a task: a task id and the run's status at once; tasks/cancel stops the run, and tasks/result is the plain call's launch", async () => {
    const modes = await demoModes(org.orgId);
    const test = await newKey(org.orgId, { keyKind: 'test' });
    const client = await connect(apis.B, test);
    const { task } = await callAsTask(client, 'run_test', { model: modes.weak.B, questions: { easy: 2 } });
    assert.equal(task.status, 'working');
    assert.equal(task.pollInterval, 5_000);
    const now = await client.experimental.tasks.getTask(task.taskId);
    assert.ok(['working', 'completed'].includes(now.status));
    assert.match(now.statusMessage ?? '', /^(queued|running|judging|completed): \d+\/2 questions done/);

    const cancelled = await client.experimental.tasks.cancelTask(task.taskId);
    assert.equal(cancelled.status, 'cancelled');
    assert.equal((await client.experimental.tasks.getTask(task.taskId)).status, 'cancelled');
    const launch = json(await resultOf(client, task.taskId));
    assert.match(String(launch.batch_id), /^[0-9a-f-]{36}$/);
    assert.equal(launch.status_url, `${apis.B.url}/v1/tests?batch_id=${String(launch.batch_id)}`);
    // The run itself stopped, as cancel_run would have stopped it.
    const run = json(await client.callTool({ name: 'cancel_run', arguments: { batch_id: launch.batch_id } }));
    assert.equal((run.batch as { state: string }).state, 'cancelled');
    // A cancelled task cannot be cancelled again (-32602).
    await assert.rejects(client.experimental.tasks.cancelTask(task.taskId), (err: { code?: number }) => err.code === -32602);
    await client.close();
  });

  it("certify_mode's dry run as a task ends at once, completed, with the plain call's result", async () => {
    const modes = await demoModes(org.orgId);
    const client = await connect(apis.A, org.ownerKey);
    const before = await moneySnapshot(org.orgId);
    const { task } = await callAsTask(client, 'certify_mode', { model: modes.weak.A, dry_run: true });
    // Created `working`, as the spec has every task; ended with the call.
    assert.equal(task.status, 'working');
    assert.equal((await client.experimental.tasks.getTask(task.taskId)).status, 'completed');
    const plain = json(await client.callTool({ name: 'certify_mode', arguments: { model: modes.weak.A, dry_run: true } }));
    // The same answer but for the price, which follows the engines' recorded costs as calls come in.
    const result = json(await resultOf(client, task.taskId));
    assert.deepEqual(keysOf(result), keysOf(plain));
    for (const field of ['dry_run', 'batch_id', 'total_questions', 'mode_key', 'estimated_minutes'])
      assert.deepEqual(result[field], plain[field], field);
    assert.equal(await moneySnapshot(org.orgId), before, 'a dry run charges nothing');
    await client.close();
  });
});

describe('mcp tasks: tasks/cancel stops a deliberation and bills what ran (loopback engines)', function () {
  this.timeout(180_000);
  let openai: Loopback;
  let workers: { stop(): Promise<void> };
  let api: Api;

  before(async () => {
    openai = await startOpenAiLoopback(script);
    workers = await startProductWorkers({ QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY, QUORUM_OPENAI_BASE_URL: openai.baseUrl });
    api = await startApi('B');
  });
  after(async () => {
    await api.close();
    await workers.stop();
    await openai.close();
  });

  it('a deliberate task cancelled mid-panel ends cancelled, its held engine call aborted, its result and receipt billed only for the seat that answered', async () => {
    const org = await newOrg(10);
    const mode = await customMode(org.orgId, 'quorum-panel', slowSeatPanel(false));
    const before = await getBalance(stack().db, org.orgId);
    const client = await connect(api, org.ownerKey);
    const seen = openai.requests.length;
    const mine = (): RecordedRequest[] => openai.requests.slice(seen);
    const { task } = await callAsTask(client, 'deliberate', {
      model: mode.ticker,
      messages: [{ role: 'user', content: `Explain why the sky is blue, step by step. ${randomUUID()}` }],
    });
    // The small seat has answered and the large one is held by the provider.
    await until(() => mine().filter((r) => !isStaff(r)).length === 2, 30_000, 'two seat calls out');
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal((await client.experimental.tasks.getTask(task.taskId)).status, 'working');

    const cancelled = await client.experimental.tasks.cancelTask(task.taskId);
    assert.equal(cancelled.status, 'cancelled');
    const held = mine().filter((r) => r.abortedAt !== undefined);
    assert.deepEqual(held.map(modelOf), ['gpt-4.1'], 'the large seat call, and only it, was aborted');
    assert.ok((held[0].abortedAt ?? Infinity) - held[0].receivedAt < SLOW_SEAT_MS / 2);
    assert.equal((await client.experimental.tasks.getTask(task.taskId)).status, 'cancelled');

    // What the provider served, by hand; the task's result is the plain call's for a cancelled deliberation.
    const served = mine().filter((r) => r.abortedAt === undefined);
    assert.deepEqual(served.map(modelOf), ['gpt-4.1-mini']);
    const { expected, tokens } = servedBill(served, 'B');
    const result = json(await resultOf(client, task.taskId)) as {
      usage: { prompt_tokens: number; completion_tokens: number };
      svc: { request_id: string; billed_usd: number };
    };
    assert.equal(Math.round(result.svc.billed_usd * 1_000_000), expected);
    assert.deepEqual([result.usage.prompt_tokens, result.usage.completion_tokens], [tokens.in, tokens.out]);
    const receipt = json(await client.callTool({ name: 'get_receipt', arguments: { request_id: result.svc.request_id } }));
    const r = receipt.receipt as { status: string; billed_usd: number };
    assert.equal(r.status, 'cancelled');
    assert.equal(Math.round(r.billed_usd * 1_000_000), expected);
    await assertEachBilledOnce(org.orgId, [result.svc.request_id]);
    const after = await getBalance(stack().db, org.orgId);
    assert.equal(before.balanceMicros - after.balanceMicros, BigInt(expected));
    await client.close();
  });
});

describe('mcp tasks: a task outlives the API process that created it', function () {
  this.timeout(180_000);
  let workers: { stop(): Promise<void> };
  let dataDir: string;
  const children: ChildProcess[] = [];

  before(async () => {
    workers = await startProductWorkers({ QUORUM_SIM_LATENCY: `fixed:${ENGINE_MS}` });
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-mcp-tasks-'));
  });
  after(async () => {
    for (const c of children.filter((p) => p.exitCode === null && p.signalCode === null)) {
      const exit = exitOf(c);
      c.kill('SIGKILL');
      await exit;
    }
    await workers.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('the API is killed while its deliberate task works; a new API reads the task to completed and its result, billed once', async () => {
    const org = await newOrg(50);
    const first = await startApiProcess(stackProcessEnv(dataDir, { QUORUM_FORM: 'B' }));
    children.push(first.child);
    const client = await connect(first, org.ownerKey);
    const { task } = await callAsTask(client, 'deliberate', { model: PANEL.B, messages: question() });
    assert.equal(task.status, 'working');
    const exit = exitOf(first.child);
    first.child.kill('SIGKILL');
    await exit;

    const second = await startApiProcess(stackProcessEnv(dataDir, { QUORUM_FORM: 'B' }));
    children.push(second.child);
    const again = await connect(second, org.ownerKey);
    const { task: ended } = await pollToEnd(again, task.taskId);
    assert.equal(ended.status, 'completed');
    assert.equal(ended.createdAt, task.createdAt);
    const body = json(await resultOf(again, task.taskId)) as { choices: { message: { content: string } }[]; svc: { request_id: string } };
    assert.ok(body.choices[0].message.content.length > 0);
    await assertEachBilledOnce(org.orgId, [body.svc.request_id]);
    await again.close();
  });
});
