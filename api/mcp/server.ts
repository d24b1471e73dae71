import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
  type CreateTaskResult,
} from '@modelcontextprotocol/sdk/types.js';
import type { Context } from 'koa';
import { QuorumError } from '../../domain/errors';
import type { Logger } from '../../infra/log';
import { admitMore, authorize } from '../http/access';
import { readJson } from '../http/body';
import { baseUrlOf, type RouteDeps } from '../http/context';
import { toolResult } from './results';
import { QuorumTaskStore } from './tasks';
import { toolsFor, type Tool, type ToolContext } from './tools';

/**
 * POST /mcp (spec 02, DESIGN §11): stateless streamable HTTP, a server and a transport per request (no session ids),
 * inside the Koa app. The REST gate runs first — browser Origin (403), key (401), organisation (403), requests per
 * minute (429) — and each tool then checks its own scope. GET and DELETE fall to the app's 405 with `Allow: POST`.
 */

/** Spec 02: a JSON-RPC batch may carry at most this many calls to the tools the service answers itself. */
export const MAX_SELF_ANSWERED_PER_BATCH = 8;

interface JsonRpcCall {
  method?: unknown;
  params?: { name?: unknown };
}

/**
 * Over the limit, the whole batch is refused (413) and none of it runs: running the first eight would leave the
 * caller to work out which of its calls happened.
 */
function refuseLargeBatch(body: unknown, tools: readonly Tool[]): void {
  if (!Array.isArray(body)) return;
  const selfAnswered = new Set(tools.filter((t) => t.kind === 'self_answered').map((t) => t.name));
  const calls = (body as JsonRpcCall[]).filter((m) => m?.method === 'tools/call' && selfAnswered.has(String(m.params?.name)));
  if (calls.length > MAX_SELF_ANSWERED_PER_BATCH)
    throw new QuorumError(
      'batch_too_large',
      `This batch calls tools the service answers itself ${calls.length} times; at most ${MAX_SELF_ANSWERED_PER_BATCH} are allowed. Nothing in it ran.`,
    );
}

/**
 * Issue 40 item 5: `deliberate`, `run_test` and `certify_mode` may be called as tasks (protocol 2025-11-25); the
 * others may not. `tasks/list` and `tasks/cancel` are answered too (api/mcp/tasks.ts).
 */
const TASKS_CAPABILITY = { list: {}, cancel: {}, requests: { tools: { call: {} } } };

export function mcpEndpoint(deps: RouteDeps, log: Logger) {
  const tools = toolsFor(deps.form);
  const byName = new Map(tools.map((t) => [t.name, t]));
  const listed = tools.map((t) => ({
    name: t.name,
    description: t.description,
    inputSchema: t.inputSchema as { type: 'object' },
    ...(t.task && { execution: { taskSupport: 'optional' as const } }),
  }));

  return async (ctx: Context): Promise<void> => {
    const auth = await authorize(
      deps,
      { authorization: ctx.get('authorization') || undefined, origin: ctx.headers.origin, edge: 'mcp', ip: ctx.ip || undefined },
      undefined,
    );
    const body = await readJson(ctx);
    refuseLargeBatch(body, tools);
    // Each call of a batch is a request to the rate limit (spec 02: "per key"); the gate counted the first.
    if (Array.isArray(body) && body.length > 1) await admitMore(deps, auth, body.length - 1);

    const base: ToolContext = { deps, auth, baseUrl: baseUrlOf(ctx) };
    const taskStore = new QuorumTaskStore(base, byName, log);
    const server = new Server({ name: 'quorum', version: '1.0.0' }, { capabilities: { tools: {}, tasks: TASKS_CAPABILITY }, taskStore });
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listed }));
    server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult | CreateTaskResult> => {
      const tool = byName.get(request.params.name);
      if (!tool)
        throw new McpError(ErrorCode.InvalidParams, `No tool named ${JSON.stringify(request.params.name)}; tools/list names them.`);
      // A task-augmented call (issue 40 item 5): its task at once; spec: a tool not offered as a task is -32601.
      if (request.params.task) {
        if (!tool.task) throw new McpError(ErrorCode.MethodNotFound, `Tool ${tool.name} does not run as a task (execution.taskSupport).`);
        return { task: await taskStore.createTask(request.params.task, extra.requestId, request) };
      }
      const token = request.params._meta?.progressToken;
      let sent = 0;
      const toolCtx: ToolContext = {
        ...base,
        progress:
          token === undefined
            ? undefined
            : async (message) => {
                sent += 1;
                await extra.sendNotification({
                  method: 'notifications/progress',
                  params: { progressToken: token, progress: sent, message },
                });
              },
      };
      return toolResult(tool, request.params.arguments ?? {}, toolCtx, log);
    });

    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    await server.connect(transport);
    ctx.respond = false;
    ctx.res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await transport.handleRequest(ctx.req, ctx.res, body);
  };
}
