import { z } from 'zod';
import { QuorumError, type ErrorCode } from '../../domain/errors';
import { CHAT_ROLES, type ChatMessage, type ChatRole } from '../../domain/messages';
import { isStorableText } from '../../domain/storable-text';
import { TIERS, type Tier } from '../../domain/modes';
import type { AnswerOptions } from '../../domain/answer-options';
import { CALLER_ANSWER_KINDS, type CallerAnswerKind } from '../../domain/aggregation';

/** Request pieces both Forms share; each Form's file assembles its own validators from them (DESIGN §9). */
const ContentPartSchema = z.looseObject({ type: z.string(), text: z.unknown().optional() });

/**
 * Message text as OpenAI clients send it: a string, or an array of parts whose text parts are joined in order (a
 * part of another type is refused by name). Text holding a NUL or an unpaired surrogate is refused before anything
 * runs: no store accepts it, and a call that could never be recorded must not reach an engine.
 */
const ContentSchema = z
  .union([z.string(), z.array(ContentPartSchema).min(1)])
  .transform((content, ctx) => {
    if (typeof content === 'string') return content;
    const texts: string[] = [];
    for (const [i, part] of content.entries()) {
      if (part.type !== 'text' || typeof part.text !== 'string') {
        ctx.addIssue({ code: 'custom', path: [i], message: `part ${i} is of type \`${part.type}\`; only text parts are accepted` });
        return z.NEVER;
      }
      texts.push(part.text);
    }
    return texts.join('\n');
  })
  .refine(isStorableText, 'holds a NUL character or an unpaired surrogate');

export const MessageSchema = z
  .object({
    // `developer` is what newer OpenAI clients call the system role.
    role: z.enum([...CHAT_ROLES, 'developer']).transform((role): ChatRole => (role === 'developer' ? 'system' : role)),
    content: ContentSchema,
  })
  .describe('A chat message.');

export const MessagesSchema = z.array(MessageSchema).min(1).describe('At least one message.');
export const ModelSchema = z.string().min(1);
/** `null` means absent, as clients send it for an unset option. */
export const absentWhenNull = <T extends z.ZodType>(schema: T) => schema.nullish().transform((v) => v ?? undefined);
/** Spec 01's `stream_not_supported`, saying where a stream is to be had (issue 53). */
const NO_STREAM = 'chat completions answer whole: to stream the answer, send the request to `POST /v1/responses` with `stream: true`';
export const StreamSchema = absentWhenNull(z.literal(false, { error: NO_STREAM })).describe(
  'Only `false` is accepted; `true` is 400 `stream_not_supported`: `POST /v1/responses` with `stream: true` streams the answer.',
);
export const streamNotSupported = (): QuorumError =>
  new QuorumError('stream_not_supported', `\`stream\`: ${NO_STREAM}.`, { param: 'stream' });
export const TierSchema = absentWhenNull(z.enum(TIERS)).describe('Engine tier that fills the seats; default `plus`.');
/**
 * `svc.answer_kind` (issue 52, both Forms, chat completions and responses): how a voting mode reads the seats' answers.
 * Absent (or null): only an explicit `Final answer:` line is read.
 */
export const AnswerKindSchema = absentWhenNull(
  z.enum(CALLER_ANSWER_KINDS, { error: `must be one of ${CALLER_ANSWER_KINDS.join(', ')}` }),
).describe(
  `How a mode that votes reads the seats' answers: ${CALLER_ANSWER_KINDS.map((k) => `\`${k}\``).join(', ')}. Absent: only an explicit \`Final answer:\` line is read.`,
);

/**
 * The call's options with `svc.answer_kind` among the answer's (`AnswerOptions.answerKind`), and `svc` without it: the
 * kind is an option of the answer, so the derived key and the fingerprint (which hash the options) tell two calls
 * differing only in it apart; a call without it is as it always was.
 */
export function withAnswerKind<S extends { answer_kind?: CallerAnswerKind }>(
  svc: S | undefined,
  options: CallOptions | undefined,
): { svc: Omit<S, 'answer_kind'> | undefined; options: CallOptions | undefined } {
  if (svc === undefined || !('answer_kind' in svc)) return { svc, options };
  const { answer_kind: kind, ...rest } = svc;
  if (kind === undefined) return { svc: rest, options };
  return { svc: rest, options: { ...options, answer: { ...options?.answer, answerKind: { kind } } } };
}

/** The `Idempotency-Key` a caller sent (a header, or a tool argument), validated; undefined when absent. */
export function parseIdempotencyKey(raw: unknown): string | undefined {
  if (raw === undefined) return undefined;
  const parsed = IdempotencyKeySchema.safeParse(raw);
  if (!parsed.success)
    throw new QuorumError('invalid_request', 'Idempotency-Key must be 1-255 printable ASCII characters without spaces, sent once.', {
      param: 'Idempotency-Key',
    });
  return parsed.data;
}

export const IdempotencyKeySchema = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces');

/**
 * OpenAI's per-call options as Quorum honours them (issue 40 item 4), in one shape whichever endpoint they came from:
 * chat completions (`response_format`, `max_tokens`/`max_completion_tokens`, `temperature`, `top_p`, `seed`, `stop`,
 * `user`, `metadata`) or the Responses API (`text.format`, `max_output_tokens`, ... onto the same fields). The answer's
 * part travels to the workflow (DeliberationInput.answer); `user` and `metadata` are stored on the request.
 */
export interface CallOptions {
  /** What the caller asked of the answer: its structure, its output limit, the engines' sampling. */
  answer?: AnswerOptions;
  /** An end user's id (`user`): stored and shown on the receipt, never sent to an engine. */
  user?: string;
  /** Up to 16 string pairs (`metadata`): stored and shown on the receipt, never sent to an engine. */
  metadata?: Record<string, string>;
}

/** What a completion validator yields in either Form; a field one Form lacks is simply absent. */
export interface CompletionInput {
  model: string;
  messages: ChatMessage[];
  stream?: false;
  tier?: Tier;
  svc?: { max_cost_usd?: number };
  /** Absent when the caller sent none of OpenAI's options. */
  options?: CallOptions;
}

export interface EstimateInput {
  model: string;
  messages: ChatMessage[];
  tier?: Tier;
}

export interface RequestSchemas {
  completion: z.ZodType<CompletionInput>;
  /** The top-level keys a completion may carry in this Form; any other is refused (checkParameters). */
  completionKeys: readonly string[];
  estimate: z.ZodType<EstimateInput>;
  /** The code for a completion sent without `model` (Form B answers `invalid_messages`). */
  completionMissingModel: ErrorCode;
}

/** The spec's code for a bad value at a path; anything unlisted is a generic 400. */
const FIELD_CODES: readonly (readonly [string, ErrorCode])[] = [
  ['svc.max_cost_usd', 'invalid_max_cost_usd'],
  // Additive (issue 52): no code of its own in the spec, so the generic one, naming the field.
  ['svc.answer_kind', 'invalid_request'],
  ['model', 'invalid_model'],
  ['messages', 'invalid_messages'],
  ['stream', 'stream_not_supported'],
  ['tier', 'invalid_tier'],
];

function pathText(path: readonly PropertyKey[]): string {
  return path.reduce<string>((out, p) => (typeof p === 'number' ? `${out}[${p}]` : out ? `${out}.${String(p)}` : String(p)), '');
}

/**
 * Parses a request body; the first problem (fields are checked in the schema's order) becomes the spec's error
 * with `param` naming the top-level field, or `svc.max_cost_usd`.
 */
export function parseRequest<T>(schema: z.ZodType<T>, body: Record<string, unknown>, missing: Partial<Record<string, ErrorCode>> = {}): T {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const where = pathText(issue.path);
  const field = String(issue.path[0] ?? '');
  const matched = FIELD_CODES.find(([prefix]) => where === prefix || where.startsWith(`${prefix}.`) || where.startsWith(`${prefix}[`));
  const absent = issue.path.length === 1 && body[field] === undefined;
  const code = (absent ? missing[field] : undefined) ?? matched?.[1] ?? 'invalid_request';
  // A message's own problem names that message (`messages[2].content`); other fields name themselves.
  const param = matched?.[0] === 'messages' && where.startsWith('messages[') ? where : (matched?.[0] ?? (field || null));
  const message = absent ? `\`${field}\` is required.` : `\`${where || 'body'}\`: ${issue.message}.`;
  throw new QuorumError(code, message, { param });
}
