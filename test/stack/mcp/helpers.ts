import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import assert from 'node:assert/strict';
import type { Api } from '../api/helpers';

/** The official SDK client over streamable HTTP, with a bearer key. */
export async function connect(api: Pick<Api, 'url'>, key?: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'quorum-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${api.url}/mcp`), {
    requestInit: { headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers } },
  });
  await client.connect(transport);
  return client;
}

export type ToolJson = Record<string, unknown> & { error?: unknown; http_status?: number; svc?: Record<string, unknown> };

/** A tool result's JSON (its text content). */
export function json(result: unknown): ToolJson {
  const content = (result as CallToolResult).content[0];
  assert.equal(content.type, 'text');
  return JSON.parse((content as { text: string }).text) as ToolJson;
}

/** A self-answered tool's failure (shape 2): its code and status. */
export function refusal(result: unknown): { code: string; status: number | undefined; svc: Record<string, unknown> | undefined } {
  assert.equal((result as CallToolResult).isError, true, JSON.stringify(result));
  const body = json(result);
  return { code: (body.error as { code: string }).code, status: body.http_status, svc: body.svc };
}
