import { z } from 'zod';
import { joinUrl, postJson } from '../http';
import { splitSystem, type AdapterCall, type AdapterOutput, type ApiKeyTarget } from './common';

const GenerateContent = z.object({
  candidates: z
    .array(
      z.object({
        content: z
          .object({ parts: z.array(z.object({ text: z.string().optional(), thought: z.boolean().optional() })).optional() })
          .optional(),
        finishReason: z.string().optional(),
      }),
    )
    .min(1),
  usageMetadata: z.object({
    promptTokenCount: z.number().int().nonnegative(),
    candidatesTokenCount: z.number().int().nonnegative().optional(),
    thoughtsTokenCount: z.number().int().nonnegative().optional(),
  }),
});

/**
 * Google Gemini `generateContent`. Thinking tokens are billed as output but counted apart from
 * `candidatesTokenCount`, so they are added to `tokensOut` and reported as reasoning tokens. A wrong
 * key comes back as 400 INVALID_ARGUMENT with reason API_KEY_INVALID: that is an auth failure.
 */
export async function callGoogle(call: AdapterCall, target: ApiKeyTarget): Promise<AdapterOutput> {
  const { spec } = call;
  const { system, turns } = splitSystem(call.messages);
  const body = await postJson({
    url: joinUrl(target.key.baseUrl, `/v1beta/models/${encodeURIComponent(spec.model)}:generateContent`),
    headers: { 'x-goog-api-key': target.key.apiKey },
    body: {
      contents: turns.map((m) => ({ role: m.role === 'assistant' ? 'model' : 'user', parts: [{ text: m.content }] })),
      ...(system !== undefined ? { systemInstruction: { parts: [{ text: system }] } } : {}),
      generationConfig: {
        maxOutputTokens: call.maxOutputTokens,
        ...(call.temperature !== undefined ? { temperature: call.temperature } : {}),
      },
    },
    schema: GenerateContent,
    deadline: call.deadline,
    signal: call.signal,
    fetchImpl: target.fetchImpl,
    engineId: spec.id,
    secrets: [target.key.apiKey],
    classify: (status, bodyText) => (status === 400 && bodyText.includes('API_KEY_INVALID') ? 'auth' : undefined),
  });
  const candidate = body.candidates[0];
  const usage = body.usageMetadata;
  const thoughts = usage.thoughtsTokenCount;
  return {
    text: (candidate?.content?.parts ?? []).map((p) => (p.thought ? '' : (p.text ?? ''))).join(''),
    finish: candidate?.finishReason === 'MAX_TOKENS' ? 'length' : 'stop',
    tokensIn: usage.promptTokenCount,
    tokensOut: (usage.candidatesTokenCount ?? 0) + (thoughts ?? 0),
    reasoningTokens: thoughts ?? null,
  };
}
