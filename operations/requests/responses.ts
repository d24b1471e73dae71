import { z } from 'zod';
import { QuorumError } from '../../domain/errors';
import type { Form } from '../../domain/form';
import { isStorableText } from '../../domain/storable-text';
import { invalidParam, onlyParams, singleParam } from '../query-params';
import { AnswerKindSchema, ModelSchema, parseRequest, TierSchema, type CompletionInput, type RequestSchemas } from './common';
import { NO_TOOLS, noop, NONE, refuseUnhonoured, UNHONOURED_ON_BOTH, type Unhonoured } from './openai-params';

/**
 * `POST /v1/responses` (issue 40 item 1): a subset of OpenAI's Responses API, read into the chat completion it runs as
 * (the same deliberation, billing and receipt), plus what a response carries beside it. Every key is honoured or
 * refused by name; none is dropped.
 */
export interface ResponseRequest {
  completion: CompletionInput;
  instructions: string | null;
  metadata: Record<string, string> | null;
  background: boolean;
  store: boolean;
  /** Answer with server-sent events (issue 40 item 2, operations/response-stream.ts). */
  stream: boolean;
  /** The response this one continues (issue 53 item 3, operations/responses.ts `continued`). */
  previousResponseId: string | null;
}

/** Keys read here, in every Form; Form B also reads `tier` (and both `svc`, as chat completions do). */
export const RESPONSES_HONOURED = [
  'model',
  'input',
  'instructions',
  'metadata',
  'background',
  'store',
  'stream',
  'svc',
  'text',
  'max_output_tokens',
  'temperature',
  'top_p',
  'user',
  'safety_identifier',
  'previous_response_id',
] as const;

/**
 * The Responses API's names for the chat completion's OpenAI parameters (operations/requests/openai-params.ts), which
 * the completion's own schema reads: one representation, whichever endpoint they came from. `text.format` is
 * `response_format` with the JSON schema's fields one level up.
 */
function asChatParameters(body: Record<string, unknown>): Record<string, unknown> {
  const text = body.text;
  if (text !== undefined && text !== null && (typeof text !== 'object' || Array.isArray(text)))
    throw new QuorumError('invalid_request', '`text` must be an object with `format`.', { param: 'text' });
  const { format, ...rest } = (text ?? {}) as Record<string, unknown>;
  const other = Object.keys(rest).find((k) => rest[k] !== null && rest[k] !== undefined);
  if (other !== undefined)
    throw new QuorumError('unsupported_parameter', `\`text.${other}\` is not supported; \`text.format\` is.`, { param: `text.${other}` });
  const f = format as Record<string, unknown> | null | undefined;
  const responseFormat =
    f && typeof f === 'object' && f.type === 'json_schema'
      ? { type: 'json_schema', json_schema: { name: f.name, description: f.description, schema: f.schema, strict: f.strict } }
      : f;
  return {
    response_format: responseFormat,
    max_tokens: body.max_output_tokens,
    temperature: body.temperature,
    top_p: body.top_p,
    user: body.user,
    safety_identifier: body.safety_identifier,
    metadata: body.metadata,
  };
}

/** Where a chat parameter's problem came from in a response request. */
const RESPONSE_PARAMS: Readonly<Record<string, string>> = { response_format: 'text.format', max_tokens: 'max_output_tokens' };

/**
 * OpenAI's response parameters Quorum does not honour: each refused by name unless absent (`null` too) or at a value
 * that asks for nothing (operations/requests/openai-params.ts, as on chat completions).
 */
export const RESPONSES_UNHONOURED: Readonly<Record<string, Unhonoured>> = {
  ...UNHONOURED_ON_BOTH,
  max_tool_calls: { why: NO_TOOLS, noop: noop(z.number().int().min(0), 'any whole number (there are no tools)') },
  conversation: { why: 'conversations are not offered: continue with `previous_response_id`, or send the earlier turns in `input`' },
  context_management: { why: 'the input is never compacted: it is sent whole, or refused over the input limit', noop: noop(NONE, '`[]`') },
  reasoning: {
    why: "the mode's engines decide their reasoning",
    noop: noop(
      z.strictObject({ effort: z.null().optional(), summary: z.null().optional(), generate_summary: z.null().optional() }),
      '`{}` (its fields `null`)',
    ),
  },
  // `disabled` is what Quorum does anyway: input over the key's limit is refused (413 `context_length_exceeded`).
  truncation: { why: 'the input is never cut: over the input limit it is refused', noop: noop(z.literal('disabled'), '`"disabled"`') },
  include: { why: 'a response holds its answer and `svc`, nothing more', noop: noop(NONE, '`[]`') },
  prompt: { why: 'stored prompts are not offered' },
  // OpenAI pads stream events with an `obfuscation` field unless told not to; Quorum's events carry none.
  stream_options: {
    why: 'stream events carry no `obfuscation` padding',
    noop: noop(z.strictObject({ include_obfuscation: z.literal(false).optional() }), '`{}`, `{"include_obfuscation": false}`'),
  },
};

function refuseUnsupported(body: Record<string, unknown>): void {
  for (const [key, rule] of Object.entries(RESPONSES_UNHONOURED)) refuseUnhonoured(key, body[key], rule, ' on responses');
}

const MessageInput = z.object({
  type: z.literal('message').optional(),
  role: z.enum(['user', 'assistant', 'system', 'developer']),
  content: z.union([
    z.string(),
    z
      .array(z.object({ type: z.enum(['input_text', 'output_text']), text: z.string() }))
      .min(1)
      .transform((parts) => parts.map((p) => p.text).join('\n')),
  ]),
});
const Input = z.union([z.string().min(1), z.array(MessageInput).min(1)]);
/** OpenAI's limits: at most 16 pairs, keys to 64 characters, values to 512. */
const StoredString = (max: number) => z.string().max(max).refine(isStorableText, 'holds a NUL character or an unpaired surrogate');
const Metadata = z.record(StoredString(64), StoredString(512)).refine((m) => Object.keys(m).length <= 16, 'at most 16 keys');

function field<T>(schema: z.ZodType<T>, value: unknown, param: string, code: 'invalid_request' | 'invalid_messages'): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = issue.path.reduce<string>((out, p) => (typeof p === 'number' ? `${out}[${p}]` : `${out}.${String(p)}`), param);
  throw new QuorumError(code, `\`${where}\`: ${issue.message}.`, { param: where });
}

/** A flag that is true, false, or absent (`null` too). */
function flag(body: Record<string, unknown>, key: string, absent: boolean): boolean {
  const v = body[key];
  if (v === undefined || v === null) return absent;
  if (typeof v !== 'boolean') throw new QuorumError('invalid_request', `\`${key}\` must be true or false.`, { param: key });
  return v;
}

/** The chat messages a response's input stands for, `instructions` first as the system message. */
function messagesOf(body: Record<string, unknown>): { messages: { role: string; content: string }[]; instructions: string | null } {
  const instructions = body.instructions === undefined || body.instructions === null ? null : body.instructions;
  if (instructions !== null && typeof instructions !== 'string')
    throw new QuorumError('invalid_request', '`instructions` must be a string.', { param: 'instructions' });
  if (body.input === undefined || body.input === null)
    throw new QuorumError('invalid_messages', '`input` is required.', { param: 'input' });
  const input = field(Input, body.input, 'input', 'invalid_messages');
  const turns = typeof input === 'string' ? [{ role: 'user', content: input }] : input.map((m) => ({ role: m.role, content: m.content }));
  return { messages: [...(instructions ? [{ role: 'system', content: instructions }] : []), ...turns], instructions };
}

export function parseResponseRequest(form: Form, schemas: RequestSchemas, body: Record<string, unknown>): ResponseRequest {
  const known: readonly string[] = [...RESPONSES_HONOURED, ...Object.keys(RESPONSES_UNHONOURED), ...(form === 'B' ? ['tier'] : [])];
  const unknown = Object.keys(body).find((k) => !known.includes(k));
  if (unknown !== undefined) throw new QuorumError('unknown_parameter', `Unknown parameter: \`${unknown}\`.`, { param: unknown });
  refuseUnsupported(body);
  const { messages, instructions } = messagesOf(body);
  const metadata =
    body.metadata === undefined || body.metadata === null ? null : field(Metadata, body.metadata, 'metadata', 'invalid_request');
  const background = flag(body, 'background', false);
  const store = flag(body, 'store', true);
  const stream = flag(body, 'stream', false);
  if ((background || stream) && !store)
    throw new QuorumError(
      'invalid_request',
      `A ${background ? 'background' : 'streamed'} response is stored until it is read (a stream resumes from it): \`store: false\` cannot be combined with it.`,
      { param: 'store' },
    );
  const previous = body.previous_response_id ?? null;
  if (previous !== null && (typeof previous !== 'string' || !/^resp_[A-Za-z0-9_-]{1,400}$/.test(previous)))
    throw new QuorumError('invalid_request', '`previous_response_id` is the `id` of a response (`resp_…`).', {
      param: 'previous_response_id',
    });
  const { model, tier, svc } = body;
  const offset = instructions ? 1 : 0;
  try {
    const completion = parseRequest(
      schemas.completion,
      { model, messages, tier, svc, ...asChatParameters(body) },
      { model: 'invalid_model' },
    );
    return { completion, instructions, metadata, background, store, stream, previousResponseId: previous };
  } catch (err) {
    // A problem names the field as this request spelt it: a chat parameter by its Responses name, a message by where
    // in `input` (after `instructions`) it came from.
    if (!(err instanceof QuorumError)) throw err;
    const named = Object.entries(RESPONSE_PARAMS).find(([chat]) => err.param === chat || err.param?.startsWith(`${chat}.`));
    if (named) {
      const param = named[1];
      // The schema's fields are one level up in `text.format`.
      const message = err.message.replaceAll('response_format.json_schema.', 'text.format.').replaceAll(named[0], param);
      throw new QuorumError(err.code, message, { param });
    }
    const at = /^messages\[(\d+)\](.*)$/.exec(err.param ?? '');
    if (!at) throw err;
    const i = Number(at[1]) - offset;
    const param = i < 0 ? 'instructions' : typeof body.input === 'string' ? 'input' : `input[${i}]${at[2]}`;
    throw new QuorumError(err.code, err.message.replace(/`messages[^`]*`/, `\`${param}\``), { param });
  }
}

/** What `/openapi.json` shows of a response request in each Form, built from the pieces the parser reads with. */
export function responseRequestDoc(form: Form): z.ZodType {
  const unhonoured = Object.fromEntries(
    Object.entries(RESPONSES_UNHONOURED).map(([k, { noop }]) => [
      k,
      noop
        ? noop.schema
            .nullish()
            .describe(`Not supported; a no-op at ${noop.values}, which ask for nothing; else 400 \`unsupported_parameter\`.`)
        : z.null().optional().describe('Not supported: refused with `unsupported_parameter` unless null.'),
    ]),
  );
  return z.object({
    model: ModelSchema.describe(form === 'A' ? 'A mode key.' : 'A ticker.'),
    input: Input.describe('A string (one user message) or messages whose content is a string or `input_text` / `output_text` parts.'),
    instructions: z.string().nullish().describe('Sent first, as the system message (not carried to a response that continues this one).'),
    previous_response_id: z
      .string()
      .nullish()
      .describe(
        'Continue that response: its conversation and answer come before `input` (`GET /v1/responses/{id}/input_items` lists them).',
      ),
    metadata: Metadata.nullish().describe('Stored with the response and shown on it.'),
    background: z.boolean().nullish().describe('Answer at once (`queued`); poll `GET /v1/responses/{id}`.'),
    store: z.boolean().nullish().describe('Default true; false removes the stored answer once it is given (not with `background`).'),
    stream: z
      .boolean()
      .nullish()
      .describe(
        'Answer with server-sent events (`text/event-stream`): the steps as `quorum.*` events, then the answer (docs/api-extensions.md).',
      ),
    text: z
      .object({ format: z.looseObject({ type: z.enum(['text', 'json_object', 'json_schema']) }).nullish() })
      .nullish()
      .describe('`format`: chat completions’ `response_format`, the JSON schema’s `name`, `schema` and `strict` one level up.'),
    max_output_tokens: z.number().int().positive().nullish().describe('Chat completions’ `max_tokens`: limits the answer.'),
    temperature: z.number().min(0).max(2).nullish().describe('As on chat completions.'),
    top_p: z.number().min(0).max(1).nullish().describe('As on chat completions.'),
    user: z.string().max(256).nullish().describe('An end user id: stored, shown on the receipt.'),
    safety_identifier: z
      .string()
      .max(256)
      .nullish()
      .describe('OpenAI’s newer name for `user`, read as `user`; with a different `user`, 400 `invalid_request`.'),
    ...(form === 'B' ? { tier: TierSchema } : {}),
    svc: z
      .looseObject({ answer_kind: AnswerKindSchema })
      .optional()
      .describe('Per-call overrides, as on chat completions (`svc.answer_kind`; Form B `svc.max_cost_usd`).'),
    ...unhonoured,
  });
}

/** `GET /v1/responses/{id}`'s query: `stream=true` answers with the response's events, after `starting_after` when given. */
export function parseRetrieveQuery(query: Readonly<Record<string, unknown>>): { stream: boolean; startingAfter: number | null } {
  const stream = singleParam(query, 'stream');
  if (stream !== undefined && stream !== 'true' && stream !== 'false') throw invalidParam('stream', '`stream` is `true` or `false`.');
  const after = singleParam(query, 'starting_after');
  const n = after !== undefined && /^\d{1,9}$/.test(after) ? Number(after) : null;
  if (after !== undefined && n === null)
    throw invalidParam('starting_after', '`starting_after` is a sequence number (a whole number from 0).');
  if (n !== null && stream !== 'true')
    throw invalidParam('starting_after', '`starting_after` resumes a stream: send it with `stream=true`.');
  return { stream: stream === 'true', startingAfter: n };
}

/** `GET /v1/responses/{id}/input_items`'s query, OpenAI's names: `order`, `after`, `limit` (1–100, default 20). */
export function parseInputItemsQuery(query: Readonly<Record<string, unknown>>): {
  order: 'asc' | 'desc';
  after: string | null;
  limit: number;
} {
  onlyParams(query, ['order', 'after', 'limit', 'include']);
  if (singleParam(query, 'include') !== undefined) throw invalidParam('include', '`include` adds nothing to a message item: leave it out.');
  const order = singleParam(query, 'order') ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw invalidParam('order', '`order` is `asc` or `desc`.');
  const limitText = singleParam(query, 'limit');
  const limit = limitText === undefined ? 20 : /^\d{1,3}$/.test(limitText) ? Number(limitText) : NaN;
  if (!(limit >= 1 && limit <= 100)) throw invalidParam('limit', '`limit` is a number of items from 1 to 100 (default 20).');
  return { order, after: singleParam(query, 'after') ?? null, limit };
}
