import { z } from 'zod';
import { schemaProblem } from '../../domain/answer-format-check';
import type { AnswerFormat, AnswerOptions, Sampling } from '../../domain/answer-options';
import { QuorumError } from '../../domain/errors';
import type { JsonSchema } from '../../domain/reply-schemas';
import { isStorableText } from '../../domain/storable-text';
import { absentWhenNull, type CallOptions } from './common';

/**
 * OpenAI's chat completion parameters (issue 40 item 4): each is honoured (the fields below) or refused by name
 * (REFUSED), never dropped; a key neither knows is refused too, as OpenAI refuses it. `null` is "absent", as
 * OpenAI's clients send an unset option.
 */

const JsonSchemaSchema = z
  .record(z.string(), z.unknown())
  .refine((s) => schemaProblem(s as JsonSchema) === undefined, { message: 'is not a JSON Schema Quorum can check' })
  .transform((s) => s as JsonSchema);

const ResponseFormatSchema = z
  .discriminatedUnion('type', [
    z.object({ type: z.literal('text') }),
    z.object({ type: z.literal('json_object') }),
    z.object({
      type: z.literal('json_schema'),
      json_schema: z.object({
        name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, `_` and `-`, at most 64'),
        description: z.string().optional(),
        schema: JsonSchemaSchema.optional(),
        strict: z.boolean().nullish(),
      }),
    }),
  ])
  .transform((f): AnswerFormat | undefined => {
    if (f.type === 'text') return undefined;
    if (f.type === 'json_object') return { type: 'json_object' };
    const { name, schema, strict } = f.json_schema;
    return { type: 'json_schema', name, schema: schema ?? {}, strict: strict ?? false };
  });

const Tokens = z.number().int().positive().max(1_000_000);
const Text = (max: number): z.ZodString => z.string().max(max).refine(isStorableText, 'holds a NUL character or an unpaired surrogate');

/** The OpenAI parameters Quorum honours, as each Form's completion schema takes them. */
export const OPENAI_FIELDS = {
  response_format: absentWhenNull(ResponseFormatSchema).describe('`text`, `json_object` or `json_schema` (with `strict`).'),
  max_tokens: absentWhenNull(Tokens).describe('Limits every engine call that may write the answer.'),
  max_completion_tokens: absentWhenNull(Tokens).describe('As `max_tokens`; with both, the smaller holds.'),
  temperature: absentWhenNull(z.number().min(0).max(2)).describe(
    "Sent to every seat and the synthesis (unless the mode's seats set their own).",
  ),
  top_p: absentWhenNull(z.number().min(0).max(1)).describe('Sent to every seat and the synthesis.'),
  seed: absentWhenNull(z.number().int().min(0).max(2_147_483_647)).describe(
    "Sent to every seat and the synthesis (unless the mode's seats set their own).",
  ),
  stop: absentWhenNull(z.union([Text(256).min(1), z.array(Text(256).min(1)).min(1).max(4)])).describe('Up to four stop sequences.'),
  user: absentWhenNull(Text(256)).describe('An end user id: stored, shown on the receipt.'),
  metadata: absentWhenNull(
    z
      .record(Text(64).min(1), Text(512))
      .refine((m) => Object.keys(m).length <= 16, 'holds at most 16 pairs')
      .transform((m) => m as Record<string, string>),
  ).describe('Up to 16 string pairs: stored, shown on the receipt.'),
};

type OpenAiFields = { [K in keyof typeof OPENAI_FIELDS]?: z.output<(typeof OPENAI_FIELDS)[K]> };

/** OpenAI's parameters mapped onto Quorum's one representation; undefined when the caller sent none. */
export function callOptionsOf(f: OpenAiFields): CallOptions | undefined {
  const limits = [f.max_tokens, f.max_completion_tokens].filter((n): n is number => n !== undefined);
  const sampling: Sampling = {
    ...(f.temperature !== undefined && { temperature: f.temperature }),
    ...(f.top_p !== undefined && { topP: f.top_p }),
    ...(f.seed !== undefined && { seed: f.seed }),
    ...(f.stop !== undefined && { stop: typeof f.stop === 'string' ? [f.stop] : f.stop }),
  };
  const answer: AnswerOptions = {
    ...(f.response_format && { format: f.response_format }),
    ...(limits.length > 0 && { maxOutputTokens: Math.min(...limits) }),
    ...(Object.keys(sampling).length > 0 && { sampling }),
  };
  const options: CallOptions = {
    ...(Object.keys(answer).length > 0 && { answer }),
    ...(f.user !== undefined && { user: f.user }),
    ...(f.metadata !== undefined && { metadata: f.metadata }),
  };
  return Object.keys(options).length > 0 ? options : undefined;
}

const isEqual = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/**
 * OpenAI parameters Quorum refuses, and why: 400 `unsupported_parameter` naming the parameter. A few are accepted at
 * the one value that asks for nothing Quorum does not do (`n: 1`, `logprobs: false`, `modalities: ["text"]`,
 * `store: true`).
 */
export const REFUSED: Readonly<Record<string, { why: string; accepts?: (value: unknown) => boolean }>> = {
  n: { why: 'a deliberation writes one answer; `n` may only be 1', accepts: (v) => v === 1 },
  logprobs: { why: 'the answer is written by several engines, with no one set of log probabilities', accepts: (v) => v === false },
  top_logprobs: { why: 'log probabilities are not offered' },
  logit_bias: { why: 'token biases are per engine tokenizer, and a panel spans several' },
  frequency_penalty: { why: 'not every engine family takes it' },
  presence_penalty: { why: 'not every engine family takes it' },
  tools: { why: 'tool calls are not offered: the panel answers in text' },
  tool_choice: { why: 'tool calls are not offered: the panel answers in text' },
  parallel_tool_calls: { why: 'tool calls are not offered: the panel answers in text' },
  functions: { why: 'function calls are not offered: the panel answers in text' },
  function_call: { why: 'function calls are not offered: the panel answers in text' },
  audio: { why: 'the answer is text only' },
  modalities: { why: 'the answer is text only; `modalities` may only be ["text"]', accepts: (v) => isEqual(v, ['text']) },
  prediction: { why: 'predicted outputs are not offered' },
  reasoning_effort: { why: "the mode's engines decide their reasoning" },
  verbosity: { why: "the mode's synthesis decides the answer's length; use `max_tokens` to limit it" },
  service_tier: { why: 'Quorum has its own tiers (`tier`, Form B)' },
  web_search_options: { why: "the mode's grounding decides when to search" },
  prompt_cache_key: { why: 'prompt caching is per provider and not offered' },
  prompt_cache_retention: { why: 'prompt caching is per provider and not offered' },
  prompt_cache_options: { why: 'prompt caching is per provider and not offered' },
  safety_identifier: { why: 'not offered; `user` is stored with the call' },
  moderation: { why: 'moderation is not offered' },
  stream_options: { why: 'streaming is not offered on chat completions' },
  store: { why: 'every call is stored with its receipt; `store` may only be true', accepts: (v) => v === true },
};

/**
 * Refuses, before anything else is read, a parameter Quorum does not honour (`unsupported_parameter`) and a key that
 * is not a parameter at all (`unknown_parameter`), naming it in `param`; `null` is absent.
 */
export function checkParameters(body: Record<string, unknown>, known: readonly string[]): void {
  for (const [key, value] of Object.entries(body)) {
    if (value === null || value === undefined || known.includes(key)) continue;
    const refused = Object.hasOwn(REFUSED, key) ? REFUSED[key] : undefined;
    if (refused?.accepts?.(value)) continue;
    if (refused) throw new QuorumError('unsupported_parameter', `\`${key}\` is not supported: ${refused.why}.`, { param: key });
    throw new QuorumError('unknown_parameter', `Unrecognized request argument supplied: \`${key}\`.`, { param: key });
  }
}
