import { z } from 'zod';
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
 * OpenAI chat completions, and any server that speaks it (vLLM, llama.cpp, Ollama) at the configured
 * base URL. Reasoning models take `max_completion_tokens` and reject a temperature.
 */
export async function callOpenAi(call: AdapterCall, target: ApiKeyTarget): Promise<AdapterOutput> {
  const { spec } = call;
  const body = await postJson({
    url: joinUrl(target.key.baseUrl, '/chat/completions'),
    headers: { authorization: `Bearer ${target.key.apiKey}` },
    body: {
      model: spec.model,
      messages: call.messages.map((m) => ({ role: m.role, content: m.content })),
      ...(spec.reasoning ? { max_completion_tokens: call.maxOutputTokens } : { max_tokens: call.maxOutputTokens }),
      ...(call.temperature !== undefined && !spec.reasoning ? { temperature: call.temperature } : {}),
    },
    schema: ChatCompletion,
    deadline: call.deadline,
    signal: call.signal,
    fetchImpl: target.fetchImpl,
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
