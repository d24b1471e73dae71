import { z } from 'zod';
import { EngineError, kindForStatus } from '../errors';
import { joinUrl, postJson, postStream, type PostOptions } from '../http';
import {
  continuation,
  splitSystem,
  streamedText,
  type AdapterCall,
  type AdapterOutput,
  type ApiKeyTarget,
  type Continuation,
} from './common';

export const ANTHROPIC_VERSION = '2023-06-01';

const Message = z.object({
  type: z.literal('message'),
  content: z.array(z.object({ type: z.string(), text: z.string().optional(), input: z.unknown().optional() })),
  stop_reason: z.string().nullable(),
  usage: z.object({ input_tokens: z.number().int().nonnegative(), output_tokens: z.number().int().nonnegative() }),
});

const Tokens = z.number().int().nonnegative();
/** The pieces of a content block: its text, or a structured reply's tool input as JSON text. */
const KNOWN_DELTAS = ['text_delta', 'input_json_delta'];
const Delta = z.union([
  z.object({ type: z.literal('text_delta'), text: z.string() }),
  z.object({ type: z.literal('input_json_delta'), partial_json: z.string() }),
  // Thinking and signatures are not the answer; a kind added later is skipped as Anthropic asks.
  z.object({ type: z.string().refine((t) => !KNOWN_DELTAS.includes(t)) }).transform(() => ({ type: 'skipped' as const })),
]);
const KNOWN_EVENTS = ['message_start', 'content_block_delta', 'message_delta', 'message_stop', 'error'];
const StreamEvent = z.union([
  z.object({ type: z.literal('message_start'), message: z.object({ usage: z.object({ input_tokens: Tokens }) }) }),
  z.object({ type: z.literal('content_block_delta'), delta: Delta }),
  z.object({
    type: z.literal('message_delta'),
    delta: z.object({ stop_reason: z.string().nullish() }),
    usage: z.object({ output_tokens: Tokens }),
  }),
  z.object({ type: z.literal('message_stop') }),
  z.object({ type: z.literal('error'), error: z.object({ type: z.string(), message: z.string() }) }),
  // Block starts and stops, pings, and any event added later (Anthropic's versioning policy: skip what you do not know).
  z.object({ type: z.string().refine((t) => !KNOWN_EVENTS.includes(t)) }).transform(() => ({ type: 'skipped' as const })),
]);

/** The HTTP status Anthropic answers each error type with, so an error sent mid-stream is classified alike. */
const ERROR_STATUS: Readonly<Record<string, number>> = {
  invalid_request_error: 400,
  authentication_error: 401,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

/** `max_tokens` is the output limit; `model_context_window_exceeded` is the same cut, from the window. */
const TRUNCATED = new Set(['max_tokens', 'model_context_window_exceeded']);
const finishOf = (stopReason: string | null | undefined): AdapterOutput['finish'] =>
  stopReason && TRUNCATED.has(stopReason) ? 'length' : 'stop';

/**
 * Anthropic Messages API. Thinking tokens are inside `output_tokens` and not reported apart. A structured reply is
 * a forced call of one tool whose input schema is the reply's; its input, as JSON, is the text. With `onText` the
 * reply is streamed. Text to continue is sent without its trailing whitespace, which Anthropic refuses there.
 */
export async function callAnthropic(call: AdapterCall, target: ApiKeyTarget): Promise<AdapterOutput> {
  const { spec, reply, onText } = call;
  const cont = continuation(call, true);
  const { system, turns } = splitSystem(cont.messages);
  const request: PostOptions = {
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
      ...(onText ? { stream: true } : {}),
    },
    deadline: call.deadline,
    signal: call.signal,
    engineId: spec.id,
    secrets: [target.key.apiKey],
  };
  if (onText) return streamAnthropic(request, cont, onText);
  const body = await postJson({ ...request, schema: Message });
  return {
    text: cont.after(body.content.map(blockText).join('')),
    finish: finishOf(body.stop_reason),
    tokensIn: body.usage.input_tokens,
    tokensOut: body.usage.output_tokens,
    reasoningTokens: null,
  };
}

async function streamAnthropic(request: PostOptions, cont: Continuation, onText: (delta: string) => void): Promise<AdapterOutput> {
  const written = streamedText(cont, onText);
  let stopReason: string | null | undefined;
  let tokensIn: number | undefined;
  let tokensOut: number | undefined;
  let stopped = false;
  await postStream({
    ...request,
    schema: StreamEvent,
    onEvent: (event) => {
      if (event.type === 'message_start') tokensIn = event.message.usage.input_tokens;
      else if (event.type === 'content_block_delta') {
        if (event.delta.type === 'text_delta') written.write(event.delta.text);
        else if (event.delta.type === 'input_json_delta') written.write(event.delta.partial_json);
      } else if (event.type === 'message_delta') {
        stopReason = event.delta.stop_reason;
        tokensOut = event.usage.output_tokens;
      } else if (event.type === 'message_stop') stopped = true;
      else if (event.type === 'error') throw streamError(request, event.error);
    },
    complete: () => stopped,
  });
  if (tokensIn === undefined || tokensOut === undefined)
    throw new EngineError('malformed', `${request.engineId}: provider streamed a reply without its usage`, { engineId: request.engineId });
  return { text: written.text(), finish: finishOf(stopReason), tokensIn, tokensOut, reasoningTokens: null };
}

/** An error sent mid-stream, classified as the same error answered over HTTP would be (`overloaded_error` is retryable). */
function streamError(request: PostOptions, error: { type: string; message: string }): EngineError {
  const status = ERROR_STATUS[error.type] ?? 500;
  return new EngineError(kindForStatus(status), `${request.engineId}: provider failed mid-answer (${error.type}): ${error.message}`, {
    status,
    engineId: request.engineId,
    secrets: request.secrets,
    said: error.message,
  });
}

function blockText(block: { type: string; text?: string; input?: unknown }): string {
  if (block.type === 'text') return block.text ?? '';
  return block.type === 'tool_use' ? JSON.stringify(block.input ?? null) : '';
}
