import { z } from 'zod';
import type { JsonSchema } from '../../domain/reply-schemas';
import { EngineError } from '../errors';
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

const Usage = z.object({
  promptTokenCount: z.number().int().nonnegative(),
  candidatesTokenCount: z.number().int().nonnegative().optional(),
  thoughtsTokenCount: z.number().int().nonnegative().optional(),
});
type Usage = z.infer<typeof Usage>;

const Candidates = z
  .array(
    z.object({
      content: z
        .object({ parts: z.array(z.object({ text: z.string().optional(), thought: z.boolean().optional() })).optional() })
        .optional(),
      finishReason: z.string().optional(),
    }),
  )
  .min(1);
type Candidate = z.infer<typeof Candidates>[number];

const GenerateContent = z.object({ candidates: Candidates, usageMetadata: Usage });
/** A streamed piece is a whole response of its own: some text, and on the last the finish reason and the usage. */
const GenerateContentChunk = z.object({ candidates: Candidates, usageMetadata: Usage.optional() });

/**
 * Google Gemini `generateContent`, or with `onText` `streamGenerateContent` as server-sent events. Thinking tokens are
 * billed as output but counted apart from `candidatesTokenCount`, so they are added to `tokensOut` and reported as
 * reasoning tokens. A wrong key comes back as 400 INVALID_ARGUMENT with reason API_KEY_INVALID: that is an auth
 * failure. A structured reply is asked for with `responseMimeType` and `responseSchema`.
 */
export async function callGoogle(call: AdapterCall, target: ApiKeyTarget): Promise<AdapterOutput> {
  const { spec, reply, onText } = call;
  const cont = continuation(call);
  const { system, turns } = splitSystem(cont.messages);
  const model = `/v1beta/models/${encodeURIComponent(spec.model)}`;
  const request: PostOptions = {
    url: joinUrl(target.key.baseUrl, onText ? `${model}:streamGenerateContent?alt=sse` : `${model}:generateContent`),
    headers: { 'x-goog-api-key': target.key.apiKey },
    body: {
      contents: turns.map((m) => ({ role: m.role === 'assistant' ? 'model' : 'user', parts: [{ text: m.content }] })),
      ...(system !== undefined ? { systemInstruction: { parts: [{ text: system }] } } : {}),
      generationConfig: {
        maxOutputTokens: call.maxOutputTokens,
        ...(call.temperature !== undefined ? { temperature: call.temperature } : {}),
        ...(call.seed !== undefined ? { seed: call.seed } : {}),
        ...(call.topP !== undefined ? { topP: call.topP } : {}),
        ...(call.stop !== undefined ? { stopSequences: call.stop } : {}),
        // Any object: JSON without a schema (Gemini's schema subset has no open object).
        ...(reply
          ? { responseMimeType: 'application/json', ...(reply.anyObject ? {} : { responseSchema: geminiSchema(reply.schema) }) }
          : {}),
      },
    },
    deadline: call.deadline,
    signal: call.signal,
    engineId: spec.id,
    secrets: [target.key.apiKey],
    classify: (status, bodyText) => (status === 400 && bodyText.includes('API_KEY_INVALID') ? 'auth' : undefined),
  };
  if (onText) return streamGoogle(request, cont, onText);
  const body = await postJson({ ...request, schema: GenerateContent });
  const candidate = body.candidates[0];
  return output(cont.after(candidateText(candidate)), candidate?.finishReason, body.usageMetadata);
}

async function streamGoogle(request: PostOptions, cont: Continuation, onText: (delta: string) => void): Promise<AdapterOutput> {
  const written = streamedText(cont, onText);
  let finishReason: string | undefined;
  let usage: Usage | undefined;
  await postStream({
    ...request,
    schema: GenerateContentChunk,
    onEvent: (chunk) => {
      const candidate = chunk.candidates[0];
      written.write(candidateText(candidate));
      finishReason = candidate?.finishReason ?? finishReason;
      usage = chunk.usageMetadata ?? usage;
    },
    complete: () => finishReason !== undefined,
  });
  if (!usage)
    throw new EngineError('malformed', `${request.engineId}: provider streamed a reply without its usage`, { engineId: request.engineId });
  return output(written.text(), finishReason, usage);
}

/** The answer's text: thought summaries are not part of it. */
function candidateText(candidate: Candidate | undefined): string {
  return (candidate?.content?.parts ?? []).map((p) => (p.thought ? '' : (p.text ?? ''))).join('');
}

function output(text: string, finishReason: string | undefined, usage: Usage): AdapterOutput {
  const thoughts = usage.thoughtsTokenCount;
  return {
    text,
    finish: finishReason === 'MAX_TOKENS' ? 'length' : 'stop',
    tokensIn: usage.promptTokenCount,
    tokensOut: (usage.candidatesTokenCount ?? 0) + (thoughts ?? 0),
    reasoningTokens: thoughts ?? null,
  };
}

/**
 * Gemini's `responseSchema` is an OpenAPI 3.0 subset: no `additionalProperties`, and `nullable` instead of a `null`
 * type. A nullable `anyOf` of one object becomes that object, nullable. It has no JSON Schema keywords (`$schema`,
 * `$defs`, `$ref`: zod 4 and pydantic write them), so a local `$ref` is written out in place, to REF_DEPTH deep (a
 * recursive schema's deeper levels are left as any value).
 */
export function geminiSchema(schema: JsonSchema): JsonSchema {
  const defs = { ...asDefs(schema.definitions), ...asDefs(schema.$defs) };
  return toGemini(schema, defs, 0);
}

/** How many `$ref`s deep a schema is written out. */
const REF_DEPTH = 8;
/** JSON Schema's own keywords, which Gemini's subset refuses. */
const DROPPED = new Set(['additionalProperties', '$schema', '$id', '$comment', '$defs', 'definitions']);

function toGemini(schema: JsonSchema, defs: Record<string, JsonSchema>, depth: number): JsonSchema {
  const ref = typeof schema.$ref === 'string' ? /^#\/(?:\$defs|definitions)\/(.+)$/.exec(schema.$ref)?.[1] : undefined;
  if (ref !== undefined) {
    const target = defs[ref];
    return target && depth < REF_DEPTH ? toGemini(target, defs, depth + 1) : {};
  }
  const alternatives = schema.anyOf;
  if (Array.isArray(alternatives)) {
    const present = alternatives.filter((a): a is JsonSchema => isSchema(a) && a.type !== 'null');
    const [only] = present;
    if (present.length === 1 && only) return { ...toGemini(only, defs, depth), nullable: true };
    return { anyOf: present.map((a) => toGemini(a, defs, depth)) };
  }
  const out: Record<string, JsonSchema[keyof JsonSchema]> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (DROPPED.has(key)) continue;
    if (key === 'properties' && isSchema(value))
      out.properties = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, isSchema(v) ? toGemini(v, defs, depth) : v]));
    else if (key === 'items' && isSchema(value)) out.items = toGemini(value, defs, depth);
    else out[key] = value;
  }
  return out;
}

function asDefs(value: unknown): Record<string, JsonSchema> {
  return isSchema(value) ? (value as Record<string, JsonSchema>) : {};
}

function isSchema(value: unknown): value is JsonSchema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
