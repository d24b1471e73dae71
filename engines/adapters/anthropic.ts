import { z } from 'zod';
import { joinUrl, postJson } from '../http';
import { splitSystem, type AdapterCall, type AdapterOutput, type ApiKeyTarget } from './common';

export const ANTHROPIC_VERSION = '2023-06-01';

const Message = z.object({
  type: z.literal('message'),
  content: z.array(z.object({ type: z.string(), text: z.string().optional(), input: z.unknown().optional() })),
  stop_reason: z.string().nullable(),
  usage: z.object({ input_tokens: z.number().int().nonnegative(), output_tokens: z.number().int().nonnegative() }),
});

/** `max_tokens` is the output limit; `model_context_window_exceeded` is the same cut, from the window. */
const TRUNCATED = new Set(['max_tokens', 'model_context_window_exceeded']);

/**
 * Anthropic Messages API. Thinking tokens are inside `output_tokens` and not reported apart. A structured reply is
 * a forced call of one tool whose input schema is the reply's; its input, as JSON, is the text.
 */
export async function callAnthropic(call: AdapterCall, target: ApiKeyTarget): Promise<AdapterOutput> {
  const { spec, reply } = call;
  const { system, turns } = splitSystem(call.messages);
  const body = await postJson({
    url: joinUrl(target.key.baseUrl, '/v1/messages'),
    headers: { 'x-api-key': target.key.apiKey, 'anthropic-version': ANTHROPIC_VERSION },
    body: {
      model: spec.model,
      max_tokens: call.maxOutputTokens,
      ...(system !== undefined ? { system } : {}),
      messages: turns.map((m) => ({ role: m.role, content: m.content })),
      ...(call.temperature !== undefined ? { temperature: call.temperature } : {}),
      ...(call.topP !== undefined ? { top_p: call.topP } : {}),
      ...(call.stop !== undefined ? { stop_sequences: call.stop } : {}),
      ...(reply ? { tools: [{ name: reply.name, input_schema: reply.schema }], tool_choice: { type: 'tool', name: reply.name } } : {}),
    },
    schema: Message,
    deadline: call.deadline,
    signal: call.signal,
    engineId: spec.id,
    secrets: [target.key.apiKey],
  });
  return {
    text: body.content.map(blockText).join(''),
    finish: body.stop_reason !== null && TRUNCATED.has(body.stop_reason) ? 'length' : 'stop',
    tokensIn: body.usage.input_tokens,
    tokensOut: body.usage.output_tokens,
    reasoningTokens: null,
  };
}

function blockText(block: { type: string; text?: string; input?: unknown }): string {
  if (block.type === 'text') return block.text ?? '';
  return block.type === 'tool_use' ? JSON.stringify(block.input ?? null) : '';
}
