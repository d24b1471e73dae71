import type { CreateTaskOptions, TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import { ErrorCode, McpError, type CallToolResult, type Request, type Result, type Task } from '@modelcontextprotocol/sdk/types.js';
import type { EndedTaskStatus, TaskRow, TaskTool } from '../../db/repositories/mcp-tasks';
import { QuorumError } from '../../domain/errors';
import type { Logger } from '../../infra/log';
import {
  cancelTask,
  currentTask,
  endTask,
  listOwnTasks,
  openTask,
  taskResult,
  type TaskResults,
  type TaskWork,
} from '../../operations/mcp-tasks';
import { answer, errorResult, toolResult } from './results';
import type { Tool, ToolContext } from './tools';

/**
 * MCP tasks (issue 40 item 5, protocol 2025-11-25) through the SDK's own tasks support: the low-level server is given
 * this TaskStore and answers `tasks/get`, `tasks/result`, `tasks/cancel` and `tasks/list` from it; a task-augmented
 * `tools/call` creates its task here. One store per HTTP request, bound to the caller's key: what it reads and writes
 * is the organisation's rows of `mcp_tasks` and the work they name (operations/mcp-tasks.ts), never process memory.
 */

function taskOf(row: TaskRow): Task {
  return {
    taskId: row.taskId,
    status: row.status,
    ...(row.statusMessage !== null && { statusMessage: row.statusMessage }),
    createdAt: row.createdAt.toISOString(),
    lastUpdatedAt: row.lastUpdatedAt.toISOString(),
    ttl: row.ttlMs,
    pollInterval: row.pollIntervalMs,
  };
}

const endedStatus = (r: CallToolResult): EndedTaskStatus => (r.isError ? 'failed' : 'completed');

/** A refusal of a task read (a key without the tool's scope) as the JSON-RPC error MCP gives for bad params. */
async function guarded<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof QuorumError) throw new McpError(ErrorCode.InvalidParams, err.message);
    throw err;
  }
}

export class QuorumTaskStore implements TaskStore {
  private readonly results: TaskResults;

  constructor(
    private readonly ctx: ToolContext,
    private readonly tools: ReadonlyMap<string, Tool>,
    private readonly log: Logger,
  ) {
    const deliberate = tools.get('deliberate') ?? { kind: 'forwarded' as const };
    this.results = {
      answered: (outcome, replayed) => answer(ctx.deps.serialiser.completion(outcome, replayed)),
      refused: (err) => errorResult(deliberate, err),
    };
  }

  /**
   * A task-augmented `tools/call`: the tool runs as its plain call would, and the task is answered as soon as its work
   * has started (a deliberation, or the stored answer it replays) or launched (a run); a call that ends before any
   * work (a refusal, a dry run) gives a task that ends at once with that result.
   */
  async createTask(params: CreateTaskOptions, _requestId: unknown, request: Request): Promise<Task> {
    const call = request.params as { name?: unknown; arguments?: Record<string, unknown> };
    const tool = this.tools.get(String(call.name));
    if (!tool?.task) throw new McpError(ErrorCode.MethodNotFound, `Tool ${String(call.name)} does not run as a task.`);
    const name = tool.name as TaskTool;
    const { ctx } = this;
    let work: TaskWork | undefined;
    let told: (w: TaskWork) => void = () => undefined;
    const started = new Promise<TaskWork>((resolve) => (told = resolve));
    // No progress notifications: this request ends with the task's creation; `tasks/get` reads the stored steps.
    const result = toolResult(tool, call.arguments ?? {}, { ...ctx, progress: undefined, started: (w) => told((work = w)) }, this.log);
    if (tool.task === 'deliberation') {
      const first = await Promise.race([result.then(() => undefined), started]);
      if (first) {
        const row = await openTask(ctx.deps, ctx.auth, { tool: name, ttl: params.ttl, work: first });
        // This process keeps the call's concurrency slot until it ends, as a background response does; were it to
        // die first, the next read of the task finds the end in the deliberation's request.
        // An error is kept on the task; an answer's end (completed, or cancelled) is read from its request, as any
        // process reads it, and the answer itself from its receipt (operations/mcp-tasks.ts).
        void result
          .then(async (r) => {
            if (r.isError) await endTask(ctx.deps, ctx.auth, row.taskId, 'failed', r as Result);
            else await currentTask(ctx.deps, ctx.auth, row.taskId, this.results);
          })
          .catch((err: unknown) => this.log.error('mcp task end not recorded', { taskId: row.taskId, err }));
        return taskOf(row);
      }
    }
    // A run's launch (no transcript in it) is kept as the task's result; the task follows the run when one started.
    const r = await result;
    const ended = tool.task === 'run' && work !== undefined && !r.isError ? undefined : endedStatus(r);
    const kept = tool.task === 'run' || r.isError ? (r as Result) : undefined;
    return taskOf(await openTask(ctx.deps, ctx.auth, { tool: name, ttl: params.ttl, work, ended, result: kept }));
  }

  async getTask(taskId: string): Promise<Task | null> {
    const row = await guarded(() => currentTask(this.ctx.deps, this.ctx.auth, taskId, this.results));
    return row ? taskOf(row) : null;
  }

  /** The SDK stores a result only for tasks it runs itself; ours end from their work, so this records such an end. */
  async storeTaskResult(taskId: string, status: 'completed' | 'failed', result: Result): Promise<void> {
    await endTask(this.ctx.deps, this.ctx.auth, taskId, status, result);
  }

  async getTaskResult(taskId: string): Promise<Result> {
    const result = await guarded(() => taskResult(this.ctx.deps, this.ctx.auth, taskId, this.results));
    if (!result) throw new McpError(ErrorCode.InternalError, `Task ${taskId} has ended, but its result is not known yet; ask again.`);
    return result;
  }

  /** Only a cancel moves a task from outside (`tasks/cancel`); no tool here asks for input mid-way. */
  async updateTaskStatus(taskId: string, status: Task['status']): Promise<void> {
    if (status !== 'cancelled') throw new McpError(ErrorCode.InvalidParams, `A task here moves to ${status} only by its own work.`);
    const row = await guarded(() => cancelTask(this.ctx.deps, this.ctx.auth, taskId));
    if (!row) throw new McpError(ErrorCode.InvalidParams, 'Failed to retrieve task: Task not found');
  }

  async listTasks(cursor?: string): Promise<{ tasks: Task[]; nextCursor?: string }> {
    const page = await guarded(() => listOwnTasks(this.ctx.deps, this.ctx.auth, cursor));
    return { tasks: page.tasks.map(taskOf), ...(page.nextCursor && { nextCursor: page.nextCursor }) };
  }
}
