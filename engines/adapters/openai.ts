import { z } from 'zod';
import type { JsonSchema, ReplySchema } from '../../domain/reply-schemas';
import { countMessagesTokens, countTokens } from '../../domain/tokens';
import { joinUrl, postJson } from '../http';
import type { AdapterCall, AdapterOutput, ApiKeyTarget } from './common';

const ChatCompletion = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({ content: z.string().nullish(), refusal: z.string().nullish() }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1),
  usage: z
    .object({
      prompt_tokens: z.number().int().nonnegative(),
      completion_tokens: z.number().int().nonnegative(),
      completion_tokens_details: z.object({ reasoning_tokens: z.number().int().nonnegative().nullish() }).nullish(),
    })
    .nullish(),
});

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
 * (`response_format`), which llama.cpp and vLLM enforce with a grammar.
 */
export async function callOpenAi(call: AdapterCall, target: ApiKeyTarget): Promise<AdapterOutput> {
  const { spec, reply } = call;
  const body = await postJson({
    url: joinUrl(target.key.baseUrl, '/chat/completions'),
    headers: { authorization: `Bearer ${target.key.apiKey}` },
    body: {
      model: spec.model,
      messages: call.messages.map((m) => ({ role: m.role, content: m.content })),
      ...outputLimit(call),
      ...sampling(call),
      ...(reply ? { response_format: responseFormat(call, reply) } : {}),
    },
    schema: ChatCompletion,
    deadline: call.deadline,
    signal: call.signal,
    engineId: spec.id,
    secrets: [target.key.apiKey],
  });
  const choice = body.choices[0];
  const text = choice?.message.content ?? choice?.message.refusal ?? '';
  // Some self-hosted servers omit usage; then the tokenizer's count stands in for it.
  return {
    text,
    finish: choice?.finish_reason === 'length' ? 'length' : 'stop',
    tokensIn: body.usage?.prompt_tokens ?? countMessagesTokens(call.messages),
    tokensOut: body.usage?.completion_tokens ?? countTokens(text),
    reasoningTokens: body.usage?.completion_tokens_details?.reasoning_tokens ?? null,
  };
}
