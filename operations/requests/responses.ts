import { z } from 'zod';
import { QuorumError } from '../../domain/errors';
import type { Form } from '../../domain/form';
import { isStorableText } from '../../domain/storable-text';
import { invalidParam, singleParam } from '../query-params';
import { AnswerKindSchema, ModelSchema, parseRequest, TierSchema, type CompletionInput, type RequestSchemas } from './common';

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
}

/** Keys read here, in every Form; Form B also reads `tier` (and both `svc`, as chat completions do). */
const HONOURED = [
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
    metadata: body.metadata,
  };
}

/** Where a chat parameter's problem came from in a response request. */
const RESPONSE_PARAMS: Readonly<Record<string, string>> = { response_format: 'text.format', max_tokens: 'max_output_tokens' };

/** OpenAI request parameters not honoured on responses: each is refused by name unless absent or `null`. */
const REFUSED = [
  'top_logprobs',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'max_tool_calls',
  'previous_response_id',
  'conversation',
  'reasoning',
  'truncation',
  'include',
  'prompt',
  'prompt_cache_key',
  'prompt_cache_retention',
  'safety_identifier',
  'service_tier',
  'stream_options',
] as const;

function refuseUnsupported(body: Record<string, unknown>): void {
  for (const key of REFUSED) {
    if (body[key] !== undefined && body[key] !== null)
      throw new QuorumError('unsupported_parameter', `\`${key}\` is not supported on responses; leave it out.`, { param: key });
  }
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
  const known: readonly string[] = [...HONOURED, ...REFUSED, ...(form === 'B' ? ['tier'] : [])];
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
  const { model, tier, svc } = body;
  const offset = instructions ? 1 : 0;
  try {
    const completion = parseRequest(
      schemas.completion,
      { model, messages, tier, svc, ...asChatParameters(body) },
      { model: 'invalid_model' },
    );
    return { completion, instructions, metadata, background, store, stream };
  } catch (err) {
    // A problem names the field as this request spelt it: a chat parameter by its Responses name, a message by where
    // in `input` (after `instructions`) it came from.
    if (!(err instanceof QuorumError)) throw err;
    const named = Object.entries(RESPONSE_PARAMS).find(([chat]) => err.param === chat || err.param?.startsWith(`${chat}.`));
    if (named) {
      const param = named[1];
      throw new QuorumError(err.code, err.message.replaceAll(named[0], param), { param });
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
  const refused = Object.fromEntries(
    REFUSED.map((k) => [k, z.null().optional().describe('Not supported: refused with `unsupported_parameter` unless null.')]),
  );
  return z.object({
    model: ModelSchema.describe(form === 'A' ? 'A mode key.' : 'A ticker.'),
    input: Input.describe('A string (one user message) or messages whose content is a string or `input_text` / `output_text` parts.'),
    instructions: z.string().nullish().describe('Sent first, as the system message.'),
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
    ...(form === 'B' ? { tier: TierSchema } : {}),
    svc: z
      .looseObject({ answer_kind: AnswerKindSchema })
      .optional()
      .describe('Per-call overrides, as on chat completions (`svc.answer_kind`; Form B `svc.max_cost_usd`).'),
    ...refused,
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
