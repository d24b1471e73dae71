import type { DbOrTrx } from './shared';

/** The MCP tools a task may wrap (migration 027). */
export type TaskTool = 'deliberate' | 'run_test' | 'certify_mode';
/** MCP's task statuses (protocol 2025-11-25); `input_required` never happens here (no tool asks the caller mid-way). */
export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';
export type EndedTaskStatus = Exclude<TaskStatus, 'working' | 'input_required'>;

/** A tool result as MCP carries it (CallToolResult), stored as sent. */
export type StoredResult = Record<string, unknown>;

export interface TaskRow {
  taskId: string;
  orgId: string;
  apiKeyId: string;
  tool: TaskTool;
  /** The deliberation's or run's workflow; null when nothing ran (a dry run, a call refused before it started). */
  workflowId: string | null;
  requestId: string | null;
  idempotencyKey: string | null;
  /** The deliberation was a replay of a stored answer (the plain call answers it in the replay's shape). */
  replayed: boolean;
  batchId: string | null;
  status: TaskStatus;
  statusMessage: string | null;
  /** The plain call's result where it holds no transcript (an error, a run's launch); a deliberation's answer is read from its receipt. */
  result: StoredResult | null;
  ttlMs: number;
  pollIntervalMs: number;
  createdAt: Date;
  lastUpdatedAt: Date;
}

export type NewTask = Omit<TaskRow, 'createdAt' | 'lastUpdatedAt'>;

interface Raw {
  task_id: string;
  org_id: string;
  api_key_id: string;
  tool: TaskTool;
  workflow_id: string | null;
  request_id: string | null;
  idempotency_key: string | null;
  replayed: boolean;
  batch_id: string | null;
  status: TaskStatus;
  status_message: string | null;
  result: StoredResult | null;
  ttl_ms: number;
  poll_interval_ms: number;
  created_at: Date;
  last_updated_at: Date;
}

function fromRaw(r: Raw): TaskRow {
  return {
    taskId: r.task_id,
    orgId: r.org_id,
    apiKeyId: r.api_key_id,
    tool: r.tool,
    workflowId: r.workflow_id,
    requestId: r.request_id,
    idempotencyKey: r.idempotency_key,
    replayed: r.replayed,
    batchId: r.batch_id,
    status: r.status,
    statusMessage: r.status_message,
    result: r.result,
    ttlMs: r.ttl_ms,
    pollIntervalMs: r.poll_interval_ms,
    createdAt: r.created_at,
    lastUpdatedAt: r.last_updated_at,
  };
}

/** Records a task; the organisation's expired tasks go at the same time (a task past its ttl is never read again). */
export async function insertTask(db: DbOrTrx, task: NewTask): Promise<TaskRow> {
  await db('mcp_tasks').where({ org_id: task.orgId }).where('expires_at', '<', db.fn.now()).delete();
  const [row] = (await db('mcp_tasks')
    .insert({
      task_id: task.taskId,
      org_id: task.orgId,
      api_key_id: task.apiKeyId,
      tool: task.tool,
      workflow_id: task.workflowId,
      request_id: task.requestId,
      idempotency_key: task.idempotencyKey,
      replayed: task.replayed,
      batch_id: task.batchId,
      status: task.status,
      status_message: task.statusMessage,
      result: task.result === null ? null : JSON.stringify(task.result),
      ttl_ms: task.ttlMs,
      poll_interval_ms: task.pollIntervalMs,
      expires_at: db.raw(`now() + make_interval(secs => ?)`, [task.ttlMs / 1000]),
    })
    .returning('*')) as Raw[];
  return fromRaw(row);
}

/** The organisation's task, unless it expired: another organisation's id is not found, as an unknown one is. */
export async function findTask(db: DbOrTrx, orgId: string, taskId: string): Promise<TaskRow | undefined> {
  const row = (await db('mcp_tasks').where({ task_id: taskId, org_id: orgId }).where('expires_at', '>', db.fn.now()).first()) as
    Raw | undefined;
  return row && fromRaw(row);
}

/**
 * Moves a working task on: to an ended status with its result, or (still working) to a new message. Only a task still
 * working moves, so the first end written (a cancel, or the work's own end) is the one it keeps. Returns the row now.
 */
export async function updateTask(
  db: DbOrTrx,
  orgId: string,
  taskId: string,
  change: { status?: EndedTaskStatus; statusMessage?: string | null; result?: StoredResult },
): Promise<TaskRow | undefined> {
  const set: Record<string, unknown> = { last_updated_at: db.fn.now() };
  if (change.status) set.status = change.status;
  if (change.statusMessage !== undefined) set.status_message = change.statusMessage;
  if (change.result) set.result = JSON.stringify(change.result);
  await db('mcp_tasks').where({ task_id: taskId, org_id: orgId, status: 'working' }).update(set);
  return findTask(db, orgId, taskId);
}

/** A page of the organisation's live tasks, newest first; `after` is the last task id of the page before. */
export async function listTasks(db: DbOrTrx, orgId: string, after: string | undefined, limit: number): Promise<TaskRow[]> {
  const q = db('mcp_tasks').where({ org_id: orgId }).where('expires_at', '>', db.fn.now());
  if (after !== undefined)
    q.whereRaw('(created_at, task_id) < (select created_at, task_id from mcp_tasks where task_id = ? and org_id = ?)', [after, orgId]);
  const rows = (await q
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'task_id', order: 'desc' },
    ])
    .limit(limit)) as Raw[];
  return rows.map(fromRaw);
}
