import type { AnswerKind } from './aggregation';
import type { ChatMessage } from './messages';
import type { JsonSchema, ReplySchema } from './reply-schemas';

/**
 * What a caller asks of the answer itself, in OpenAI's terms (issue 40 item 4): its structure (`response_format`,
 * the Responses API's `text.format`), its output limit (`max_tokens`, `max_completion_tokens`, `max_output_tokens`)
 * and the sampling of the engines that write it. The API parses them (operations/requests/common.ts `CallOptions`);
 * the deliberation workflow carries them (DeliberationInput.answer) to the engine calls. Plain data: the workflow
 * bundle imports this.
 */
export type AnswerFormat = { type: 'json_object' } | { type: 'json_schema'; name: string; schema: JsonSchema; strict: boolean };

export interface Sampling {
  temperature?: number;
  topP?: number;
  seed?: number;
  /** Up to four sequences; the engine stops before writing one. */
  stop?: string[];
}

export interface AnswerOptions {
  format?: AnswerFormat;
  /** Every engine call that may write the answer is limited to this (see docs/api-extensions.md). */
  maxOutputTokens?: number;
  /** Sent to every seat and to the synthesis; a seat's own tuning is refused beside it (operations/completion.ts). */
  sampling?: Sampling;
  /** `svc.answer_kind` (issue 52): how the seats' answers are read for a mode's vote; absent, only `Final answer:` lines are. */
  answerKind?: AnswerKind;
}

/** The structure an engine is asked for, the protocol's own way (engines/adapters): `json_object` is any object. */
export function replySchemaOf(format: AnswerFormat): ReplySchema {
  if (format.type === 'json_object') return { name: 'answer', schema: { type: 'object' }, anyObject: true };
  return { name: format.name, schema: format.schema, strict: format.strict };
}

/**
 * Told in words as well: an engine without structured output reads only this, OpenAI's `json_object` mode requires
 * the word JSON in the messages, and the synthesis prompt quotes only the question, not the caller's own system text.
 */
function formatInstruction(format: AnswerFormat): string {
  const shape =
    format.type === 'json_object' ? 'a JSON object' : `a JSON value valid against this JSON Schema:\n${JSON.stringify(format.schema)}`;
  return `Reply with ${shape}\nReply with the JSON only: no prose and no code fences.`;
}

/** The messages with the format's instruction at the end of the one leading system message (some chat templates allow one). */
export function withFormatInstruction(messages: readonly ChatMessage[], format: AnswerFormat | undefined): ChatMessage[] {
  if (!format) return [...messages];
  const instruction = formatInstruction(format);
  const [first, ...rest] = messages;
  if (first?.role === 'system') return [{ role: 'system', content: `${first.content}\n\n${instruction}` }, ...rest];
  return [{ role: 'system', content: instruction }, ...messages];
}
