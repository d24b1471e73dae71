import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { QuorumError } from '../../domain/errors';
import type { Logger } from '../../infra/log';
import { requireScope } from '../../operations/checks';
import { asQuorumError } from '../http/errors';
import type { JsonObject } from '../forms/json';
import { failedShape, toolErrorShape } from './errors';
import type { Tool, ToolContext } from './tools';

export function text(value: unknown): CallToolResult['content'] {
  return [{ type: 'text', text: JSON.stringify(value) }];
}

/** A tool's answer as MCP carries it: the JSON as text and as structured content. */
export function answer(result: JsonObject): CallToolResult {
  return { content: text(result), structuredContent: result };
}

/** A tool's error in the shape its kind answers with (spec 02), always a result with `isError: true`. */
export function errorResult(tool: Pick<Tool, 'kind'>, err: QuorumError): CallToolResult {
  return { isError: true, content: text(toolErrorShape(tool.kind, err)) };
}

/** Runs a tool as a plain call answers it (and a task's result keeps it): never rejects, an error is a result. */
export async function toolResult(tool: Tool, args: Record<string, unknown>, ctx: ToolContext, log: Logger): Promise<CallToolResult> {
  try {
    if (tool.scope) requireScope(ctx.auth, tool.scope);
    return answer(await tool.run(args, ctx));
  } catch (thrown) {
    const err = asQuorumError(thrown);
    if (thrown instanceof QuorumError || err.code === 'service_unavailable') return errorResult(tool, err);
    log.error('mcp tool failed', { tool: tool.name, err: thrown });
    return { isError: true, content: text(failedShape()) };
  }
}
