import { z } from 'zod';
import { schemaProblem } from '../../domain/answer-format-check';
import type { AnswerFormat, AnswerOptions, Sampling } from '../../domain/answer-options';
import { QuorumError } from '../../domain/errors';
import type { JsonSchema } from '../../domain/reply-schemas';
import { isStorableText } from '../../domain/storable-text';
import { absentWhenNull, streamNotSupported, type CallOptions } from './common';

/**
 * OpenAI's chat completion parameters (issue 40 item 4): each is honoured (the fields below) or refused by name
 * (REFUSED), never dropped; a key neither knows is refused too, as OpenAI refuses it. `null` is "absent", as
 * OpenAI's clients send an unset option.
 */

/** A caller's schema, refused before anything runs when it cannot be checked, saying why (Ajv's reason, shortened). */
const JsonSchemaSchema = z
  .record(z.string(), z.unknown())
  .superRefine((s, ctx) => {
    const problem = schemaProblem(s as JsonSchema);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: `is not a JSON Schema Quorum can check: ${problem.slice(0, 300)}` });
  })
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
  safety_identifier: absentWhenNull(Text(256)).describe(
    'OpenAI’s newer name for `user`, read as `user`; with a different `user`, 400 `invalid_request`.',
  ),
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
  const user = f.user ?? f.safety_identifier;
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
    ...(user !== undefined && { user }),
    ...(f.metadata !== undefined && { metadata: f.metadata }),
  };
  return Object.keys(options).length > 0 ? options : undefined;
}

/**
 * `user` and `safety_identifier` (OpenAI's newer name for it) name one end user, stored as `user`: both sent and
 * different is refused, naming the newer, rather than one dropped.
 */
export function oneEndUser<T extends { user?: string; safety_identifier?: string }>(f: T, ctx: z.RefinementCtx<T>): void {
  if (f.user !== undefined && f.safety_identifier !== undefined && f.user !== f.safety_identifier)
    ctx.addIssue({ code: 'custom', path: ['safety_identifier'], message: 'names another end user than `user`; send one of them' });
}

/**
 * An OpenAI parameter Quorum does not honour (issue 53 item 2): refused by name, 400 `unsupported_parameter` saying
 * why, unless its value asks for nothing (`noop`: accepted and ignored, as it changes nothing OpenAI would do for the
 * call either). `values` says which, for the message, `/openapi.json` and the docs' table.
 */
export interface Unhonoured {
  why: string;
  noop?: { schema: z.ZodType; values: string };
}

export const noop = (schema: z.ZodType, values: string): Unhonoured['noop'] => ({ schema, values });
/** An empty list: no tools, no extra output. */
export const NONE = z.array(z.unknown()).length(0);

export const NO_TOOLS = 'tool calls are not offered: the panel answers in text';
const NO_CACHE = 'prompt caching is per provider and not offered';

/** Parameters chat completions and responses both have, not honoured on either, alike on both. */
export const UNHONOURED_ON_BOTH: Readonly<Record<string, Unhonoured>> = {
  top_logprobs: { why: 'log probabilities are not offered', noop: noop(z.literal(0), '`0`') },
  tools: { why: NO_TOOLS, noop: noop(NONE, '`[]`') },
  // A tool itself is refused, so with any call that passes there are none to choose or call at once.
  tool_choice: { why: NO_TOOLS, noop: noop(z.enum(['none', 'auto']), '`"none"`, `"auto"` (there are no tools)') },
  parallel_tool_calls: { why: NO_TOOLS, noop: noop(z.boolean(), '`true`, `false` (there are no tools)') },
  service_tier: {
    why: 'OpenAI’s processing tiers are not offered (Form B’s `tier` picks the seats)',
    noop: noop(z.enum(['auto', 'default']), '`"auto"`, `"default"`'),
  },
  prompt_cache_key: { why: NO_CACHE },
  prompt_cache_retention: { why: NO_CACHE },
  prompt_cache_options: { why: NO_CACHE },
  moderation: { why: 'moderation is not offered' },
};

/** The parameters of chat completions Quorum does not honour, each refused or a no-op (checkParameters). */
export const CHAT_UNHONOURED: Readonly<Record<string, Unhonoured>> = {
  ...UNHONOURED_ON_BOTH,
  n: { why: 'a deliberation writes one answer', noop: noop(z.literal(1), '`1`') },
  logprobs: {
    why: 'the answer is written by several engines, with no one set of log probabilities',
    noop: noop(z.literal(false), '`false`'),
  },
  logit_bias: { why: 'token biases are per engine tokenizer, and a panel spans several', noop: noop(z.strictObject({}), '`{}`') },
  frequency_penalty: { why: 'not every engine family takes it', noop: noop(z.literal(0), '`0`') },
  presence_penalty: { why: 'not every engine family takes it', noop: noop(z.literal(0), '`0`') },
  functions: { why: 'function calls are not offered: the panel answers in text', noop: noop(NONE, '`[]`') },
  function_call: {
    why: 'function calls are not offered: the panel answers in text',
    noop: noop(z.enum(['none', 'auto']), '`"none"`, `"auto"` (there are no functions)'),
  },
  audio: { why: 'the answer is text only' },
  modalities: { why: 'the answer is text only', noop: noop(z.tuple([z.literal('text')]), '`["text"]`') },
  prediction: { why: 'predicted outputs are not offered' },
  reasoning_effort: { why: "the mode's engines decide their reasoning" },
  verbosity: { why: "the mode's synthesis decides the answer's length; use `max_tokens` to limit it" },
  web_search_options: { why: "the mode's grounding decides when to search" },
  stream_options: { why: 'chat completions do not stream (`POST /v1/responses` with `stream: true` does)' },
  // OpenAI's `store` puts the completion in its stored-completions list (evals, distillation), which Quorum does not
  // have; the receipt is written either way (the bill and an idempotent replay read it; the organisation's retention
  // settings say how long its texts are kept).
  store: {
    why: 'OpenAI’s stored completions (evals, distillation) are not offered',
    noop: noop(z.boolean(), '`true`, `false` (the receipt is kept either way)'),
  },
};

/**
 * Refuses `key` with `unsupported_parameter` unless it is absent (`null` too) or its value asks for nothing; `where`
 * names the endpoint in the message when it is not chat completions.
 */
export function refuseUnhonoured(key: string, value: unknown, rule: Unhonoured, where = ''): void {
  if (value === null || value === undefined || rule.noop?.schema.safeParse(value).success) return;
  const instead = rule.noop ? `accepted only at ${rule.noop.values}, asking for nothing` : 'leave it out';
  throw new QuorumError('unsupported_parameter', `\`${key}\` is not supported${where}: ${rule.why}; ${instead}.`, { param: key });
}

/**
 * Refuses, before anything else is read, a stream (spec 01's `stream_not_supported`: before a parameter that only a
 * stream would send, so a streaming client is told where streams are), a parameter Quorum does not honour
 * (`unsupported_parameter`) and a key that is not a parameter at all (`unknown_parameter`), naming it in `param`;
 * `null` is absent.
 */
export function checkParameters(body: Record<string, unknown>, known: readonly string[]): void {
  if (body.stream !== undefined && body.stream !== null && body.stream !== false) throw streamNotSupported();
  for (const [key, value] of Object.entries(body)) {
    if (value === null || value === undefined || known.includes(key)) continue;
    const rule = Object.hasOwn(CHAT_UNHONOURED, key) ? CHAT_UNHONOURED[key] : undefined;
    if (rule) refuseUnhonoured(key, value, rule);
    else throw new QuorumError('unknown_parameter', `Unrecognized request argument supplied: \`${key}\`.`, { param: key });
  }
}
