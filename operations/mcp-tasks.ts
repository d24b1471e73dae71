import type { OperationDeps } from './deps';
import { randomBytes } from 'node:crypto';
import type { KeyPrincipal } from './principal';
import {
  findTask,
  insertTask,
  listTasks,
  updateTask,
  type EndedTaskStatus,
  type StoredResult,
  type TaskRow,
  type TaskTool,
} from '../db/repositories/mcp-tasks';
import { readDeliberationEvents } from '../db/repositories/deliberation-events';
import { findResponse, type ResponseRow } from '../db/repositories/responses';
import { describeEvent, type StepEvent } from '../domain/deliberation-events';
import { findRun } from '../db/repositories/runs';
import type { Scope } from '../domain/api-keys';
import { QuorumError } from '../domain/errors';
import type { Outcome } from '../domain/outcome';
import { ENDED_STATES, totalQuestions, type RunProgress } from '../domain/runs';
import { requireScope } from './checks';
import { failureOf } from './deliberation';
import { cancelResponse, responseIdOf } from './responses';
import { cancelOrgRun } from './run-cancel';
import { viewOf } from './run-poll';

/**
 * MCP tasks (issue 40 item 5, protocol 2025-11-25): a task-augmented `deliberate`, `run_test` or `certify_mode` is a
 * row of `mcp_tasks` naming the work it wraps; the work's own record is the source of truth. A working task's status
 * and progress are read from it on every `tasks/get` (a deliberation's request and progress query, a run's poll), so a
 * task outlives the API process that created it; the organisation that created it is the only one that finds it.
 */

/** A task's lifetime from its creation when the caller asks for none (or for unlimited), and the most it may ask. */
export const TASK_TTL_MS = { default: 24 * 3_600_000, max: 7 * 24 * 3_600_000, min: 60_000 };
/**
 * The poll interval a task suggests: a deliberation's steps take seconds, a run's questions minutes. Each `tasks/get`
 * is a request toward the key's requests per minute (60 by default), so a deliberation's polls take half of them.
 */
export const TASK_POLL_MS: Readonly<Record<TaskTool, number>> = { deliberate: 2_000, run_test: 5_000, certify_mode: 5_000 };
/**
 * Who else in the organisation may read a task: a key with the scope its tool needs (the key that created it always
 * may). A run's cancel checks the run's own scope besides, as `cancel_run` does.
 */
const TASK_SCOPES: Readonly<Record<TaskTool, Scope>> = { deliberate: 'completions', run_test: 'tests', certify_mode: 'certify' };

/** The edge's results, as the plain tool call answers them. */
export interface TaskResults {
  answered(outcome: Outcome, replayed: boolean): StoredResult;
  refused(err: QuorumError): StoredResult;
}

/** What a task's work is, once known: the deliberation's request, or the launched run. */
export interface TaskWork {
  workflowId: string;
  requestId?: string;
  idempotencyKey?: string;
  /** The deliberation replayed a stored answer: nothing ran. */
  replayed?: boolean;
  batchId?: string;
}

function ttlOf(requested: number | null | undefined): number {
  if (requested === undefined || requested === null) return TASK_TTL_MS.default;
  return Math.min(Math.max(Math.round(requested), TASK_TTL_MS.min), TASK_TTL_MS.max);
}

/**
 * Records a task, working on `work` (a deliberation started or replayed, a run launched), with the plain call's result
 * when it is known and holds no transcript (an error, a launch). A task whose work ended before it was recorded (a
 * refusal, a dry run) is `ended` at once; as the spec has every task, it is answered as created, `working`.
 */
export async function openTask(
  deps: OperationDeps,
  auth: KeyPrincipal,
  input: { tool: TaskTool; ttl?: number | null; work?: TaskWork; result?: StoredResult; ended?: EndedTaskStatus },
): Promise<TaskRow> {
  const { work, ended } = input;
  const task = await insertTask(deps.db, {
    taskId: `task_${randomBytes(16).toString('hex')}`,
    orgId: auth.orgId,
    apiKeyId: auth.keyId,
    tool: input.tool,
    workflowId: work?.workflowId ?? null,
    requestId: work?.requestId ?? null,
    idempotencyKey: work?.idempotencyKey ?? null,
    replayed: work?.replayed ?? false,
    batchId: work?.batchId ?? null,
    status: 'working',
    statusMessage: input.tool === 'deliberate' ? 'deliberating' : 'queued',
    result: input.result ?? null,
    ttlMs: ttlOf(input.ttl),
    pollIntervalMs: TASK_POLL_MS[input.tool],
  });
  if (ended) await updateTask(deps.db, auth.orgId, task.taskId, { status: ended, statusMessage: null });
  return task;
}

/**
 * The work's end as this process saw it, with the plain call's result when it holds no transcript (an error); a task
 * already ended keeps its end.
 */
export async function endTask(
  deps: OperationDeps,
  auth: KeyPrincipal,
  taskId: string,
  status: EndedTaskStatus,
  result: StoredResult | undefined,
): Promise<void> {
  await updateTask(deps.db, auth.orgId, taskId, { status, result });
}

async function ownTask(deps: OperationDeps, auth: KeyPrincipal, taskId: string): Promise<TaskRow | undefined> {
  const task = await findTask(deps.db, auth.orgId, taskId);
  if (task && task.apiKeyId !== auth.keyId) requireScope(auth, TASK_SCOPES[task.tool]);
  return task;
}

/** A deliberation's end as its request records it, or undefined while it runs. */
async function deliberationEnd(
  deps: OperationDeps,
  task: TaskRow,
  row: ResponseRow,
  results: TaskResults,
): Promise<{ status: EndedTaskStatus; result: StoredResult } | undefined> {
  if (row.outcome) {
    const status = row.outcome.status === 'cancelled' ? 'cancelled' : 'completed';
    return { status, result: results.answered(row.outcome, task.replayed) };
  }
  if (row.state === 'running') return undefined;
  const code = row.errorCode ?? 'internal_error';
  const err =
    (task.workflowId && (await failureOf(deps.client, task.workflowId, row.requestId))) ||
    new QuorumError(QuorumError.isCode(code) ? code : 'internal_error', `The deliberation ended without an answer (${code}).`, {
      requestId: row.requestId,
    });
  return { status: 'failed', result: results.refused(err) };
}

function runMessage(p: RunProgress): string {
  return `${p.state}: ${totalQuestions(p.done)}/${totalQuestions(p.total)} questions done${p.failed ? `, ${p.failed} failed` : ''}`;
}

/** A working task read from its work: still working with where it is, or ended (and recorded so). */
async function refresh(deps: OperationDeps, auth: KeyPrincipal, task: TaskRow, results: TaskResults): Promise<TaskRow> {
  if (task.tool === 'deliberate') {
    const row = task.idempotencyKey ? await findResponse(deps.db, auth.orgId, task.idempotencyKey) : undefined;
    if (!row) return task;
    const end = await deliberationEnd(deps, task, row, results);
    // Only an error is kept on the task: an answer is read from its receipt, whose retention holds for it.
    if (end) {
      const result = end.status === 'failed' ? end.result : undefined;
      return (await updateTask(deps.db, auth.orgId, task.taskId, { status: end.status, result })) ?? task;
    }
    // Its last stored step (issue 40 item 2), in the words of the plain call's progress notifications.
    const last = (await readDeliberationEvents(deps.db, row.requestId)).filter((e) => e.event.type !== 'ended').at(-1);
    return last ? { ...task, statusMessage: describeEvent(last.event as StepEvent) } : task;
  }
  const run = task.batchId ? await findRun(deps.db, auth.orgId, task.batchId) : undefined;
  if (!run) return task;
  const { progress } = await viewOf({ ...deps, client: deps.client }, auth.orgId, run);
  if (!ENDED_STATES.includes(progress.state)) return { ...task, statusMessage: runMessage(progress) };
  const status: EndedTaskStatus = progress.state === 'failed' ? 'failed' : progress.state === 'cancelled' ? 'cancelled' : 'completed';
  return (await updateTask(deps.db, auth.orgId, task.taskId, { status, statusMessage: runMessage(progress) })) ?? task;
}

/** `tasks/get`: the organisation's task as its work stands now; undefined for another organisation's, or an expired one. */
export async function currentTask(
  deps: OperationDeps,
  auth: KeyPrincipal,
  taskId: string,
  results: TaskResults,
): Promise<TaskRow | undefined> {
  const task = await ownTask(deps, auth, taskId);
  return task?.status === 'working' ? refresh(deps, auth, task, results) : task;
}

/**
 * `tasks/cancel`: a deliberation is cancelled as `POST /v1/responses/{id}/cancel` cancels it (its engine calls stopped,
 * billed for what ran, the rest of its hold released), a run as `cancel_run` stops it; the task is `cancelled` from
 * then on, with the result the plain call would have returned for the cancelled work.
 */
export async function cancelTask(deps: OperationDeps, auth: KeyPrincipal, taskId: string): Promise<TaskRow | undefined> {
  const task = await ownTask(deps, auth, taskId);
  if (!task || task.status !== 'working') return task;
  // Cancelled first: the work's own end, which the cancel brings about, is then not written over it.
  const statusMessage = 'Cancelled by the caller: billed only for what ran.';
  const cancelled = await updateTask(deps.db, auth.orgId, task.taskId, { status: 'cancelled', statusMessage });
  if (task.tool === 'deliberate' && task.idempotencyKey) await cancelResponse(deps, auth, responseIdOf(task.idempotencyKey));
  else if (task.batchId) await cancelOrgRun(deps, auth, { batchId: task.batchId });
  return cancelled;
}

const RESULT_WAIT_MS = 15_000;
const RESULT_POLL_MS = 200;

/**
 * `tasks/result` of an ended task: the plain call's result. A deliberation's answer is read from its receipt each time
 * (as it stands: a transcript deleted or past its retention reads blank, as a response's poll does); one cancelled
 * before it had settled is read once the workflow has settled it.
 */
export async function taskResult(
  deps: OperationDeps,
  auth: KeyPrincipal,
  taskId: string,
  results: TaskResults,
): Promise<StoredResult | undefined> {
  const task = await ownTask(deps, auth, taskId);
  if (!task) return undefined;
  if (task.result || !task.idempotencyKey) return task.result ?? undefined;
  for (const until = Date.now() + RESULT_WAIT_MS; Date.now() < until;) {
    const row = await findResponse(deps.db, auth.orgId, task.idempotencyKey);
    const end = row && (await deliberationEnd(deps, task, row, results));
    if (end) return end.result;
    await new Promise((resolve) => setTimeout(resolve, RESULT_POLL_MS));
  }
  return undefined;
}

const LIST_PAGE = 20;

/** `tasks/list`: the organisation's tasks, newest first, as stored (a page costs no call to the work behind each). */
export async function listOwnTasks(
  deps: OperationDeps,
  auth: KeyPrincipal,
  cursor?: string,
): Promise<{ tasks: TaskRow[]; nextCursor?: string }> {
  if (cursor !== undefined && !(await findTask(deps.db, auth.orgId, cursor)))
    throw new QuorumError('invalid_request', `Invalid cursor: \`${cursor.slice(0, 100)}\`.`, { param: 'cursor' });
  const tasks = await listTasks(deps.db, auth.orgId, cursor, LIST_PAGE + 1);
  const page = tasks.slice(0, LIST_PAGE);
  return { tasks: page, ...(tasks.length > LIST_PAGE && { nextCursor: page[page.length - 1].taskId }) };
}
