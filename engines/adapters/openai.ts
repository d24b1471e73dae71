import { z } from 'zod';
import type { JsonSchema, ReplySchema } from '../../domain/reply-schemas';
import { countMessagesTokens, countTokens } from '../../domain/tokens';
import { EngineError } from '../errors';
import { joinUrl, postJson, postStream, type PostOptions } from '../http';
import type { ChatMessage } from '../types';
import { continuation, streamedText, type AdapterCall, type AdapterOutput, type ApiKeyTarget, type Continuation } from './common';

const Usage = z.object({
  prompt_tokens: z.number().int().nonnegative(),
  completion_tokens: z.number().int().nonnegative(),
  completion_tokens_details: z.object({ reasoning_tokens: z.number().int().nonnegative().nullish() }).nullish(),
});
type Usage = z.infer<typeof Usage>;

const ChatCompletion = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({ content: z.string().nullish(), refusal: z.string().nullish() }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1),
  usage: Usage.nullish(),
});

/** One streamed chunk: a piece of the answer, its finish reason, or (asked for, last) the usage with no choice. */
const ChatChunk = z.union([
  z.object({
    choices: z.array(
      z.object({
        delta: z.object({ content: z.string().nullish(), refusal: z.string().nullish() }).nullish(),
        finish_reason: z.string().nullish(),
      }),
    ),
    usage: Usage.nullish(),
  }),
  // A server that fails once it has begun the stream (vLLM, llama.cpp) says so in a chunk of its own.
  z.object({ error: z.object({ message: z.string() }) }),
]);

/**
 * The output limit in the form the endpoint honours. OpenAI's own models take `max_completion_tokens` (its reasoning
 * models refuse `max_tokens`) or `max_tokens`, never both. Other models behind the protocol are served by other
 * servers, which honour one or the other (llama-cpp-python's ignores `max_completion_tokens`; older vLLM and Ollama
 * know only `max_tokens`), so they get both.
 */
function outputLimit(call: AdapterCall): Record<string, number> {
  const n = call.maxOutputTokens;
  if (call.spec.maker !== 'openai') return { max_tokens: n, max_completion_tokens: n };
  return call.spec.reasoning ? { max_completion_tokens: n } : { max_tokens: n };
}

/** OpenAI's own strict mode refuses a string's `maxLength`; the servers that enforce schemas with a grammar honour it. */
function strictFor(call: AdapterCall, schema: JsonSchema): JsonSchema {
  return call.spec.maker === 'openai' ? withoutMaxLength(schema) : schema;
}

function withoutMaxLength(value: JsonSchema): JsonSchema {
  const walk = (v: JsonSchema[string]): JsonSchema[string] =>
    Array.isArray(v) ? v.map(walk) : typeof v === 'object' && v !== null ? withoutMaxLength(v) : v;
  return Object.fromEntries(Object.entries(value).flatMap(([k, v]) => (k === 'maxLength' ? [] : [[k, walk(v)]])));
}

/** Reasoning models refuse temperature, top_p and stop: they are sent to the others only. */
function sampling(call: AdapterCall): Record<string, unknown> {
  const free = !call.spec.reasoning;
  return {
    ...(call.temperature !== undefined && free ? { temperature: call.temperature } : {}),
    ...(call.topP !== undefined && free ? { top_p: call.topP } : {}),
    ...(call.stop !== undefined && free ? { stop: call.stop } : {}),
    ...(call.seed !== undefined ? { seed: call.seed } : {}),
  };
}

/** The protocol's own structured output: any object (`json_object`), or the schema, strict unless a caller said not. */
function responseFormat(call: AdapterCall, reply: ReplySchema): Record<string, unknown> {
  if (reply.anyObject) return { type: 'json_object' };
  return { type: 'json_schema', json_schema: { name: reply.name, strict: reply.strict ?? true, schema: strictFor(call, reply.schema) } };
}

/**
 * OpenAI chat completions, and any server that speaks it (vLLM, llama.cpp, Ollama) at the configured
 * base URL. Reasoning models reject a temperature. A structured reply is asked for with a strict JSON schema
 * (`response_format`), which llama.cpp and vLLM enforce with a grammar. With `onText` the reply is streamed, its usage
 * asked for in a last chunk of its own.
 */
export async function callOpenAi(call: AdapterCall, target: ApiKeyTarget): Promise<AdapterOutput> {
  const { spec, reply, onText } = call;
  const cont = continuation(call);
  const request: PostOptions = {
    url: joinUrl(target.key.baseUrl, '/chat/completions'),
    headers: { authorization: `Bearer ${target.key.apiKey}` },
    body: {
      model: spec.model,
      messages: cont.messages.map((m) => ({ role: m.role, content: m.content })),
      ...outputLimit(call),
      ...sampling(call),
      ...(reply ? { response_format: responseFormat(call, reply) } : {}),
      ...(onText ? { stream: true, stream_options: { include_usage: true } } : {}),
    },
    deadline: call.deadline,
    signal: call.signal,
    engineId: spec.id,
    secrets: [target.key.apiKey],
  };
  if (onText) return streamOpenAi(request, cont, onText);
  const body = await postJson({ ...request, schema: ChatCompletion });
  const choice = body.choices[0];
  return output(cont.messages, cont.after(choice?.message.content ?? choice?.message.refusal ?? ''), choice?.finish_reason, body.usage);
}

async function streamOpenAi(request: PostOptions, cont: Continuation, onText: (delta: string) => void): Promise<AdapterOutput> {
  const written = streamedText(cont, onText);
  let finish: string | undefined;
  let usage: Usage | undefined;
  await postStream({
    ...request,
    schema: ChatChunk,
    doneData: '[DONE]',
    onEvent: (chunk) => {
      if ('error' in chunk)
        throw new EngineError('server', `${request.engineId}: provider failed mid-answer: ${chunk.error.message}`, {
          engineId: request.engineId,
          secrets: request.secrets,
          said: chunk.error.message,
        });
      const choice = chunk.choices[0];
      written.write(choice?.delta?.content ?? '');
      written.write(choice?.delta?.refusal ?? '');
      finish = choice?.finish_reason ?? finish;
      usage = chunk.usage ?? usage;
    },
    // A server that ends the stream without `[DONE]` has still said the answer is whole by its finish reason.
    complete: () => finish !== undefined,
  });
  return output(cont.messages, written.text(), finish, usage);
}

/** Some self-hosted servers omit usage; then the tokenizer's count stands in for it. */
function output(
  messages: ChatMessage[],
  text: string,
  finishReason: string | null | undefined,
  usage: Usage | null | undefined,
): AdapterOutput {
  return {
    text,
    finish: finishReason === 'length' ? 'length' : 'stop',
    tokensIn: usage?.prompt_tokens ?? countMessagesTokens(messages),
    tokensOut: usage?.completion_tokens ?? countTokens(text),
    reasoningTokens: usage?.completion_tokens_details?.reasoning_tokens ?? null,
  };
}
