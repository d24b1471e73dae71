import type { AnswerFormat } from '../../domain/answer-options';
import type { InputItem, ResponseView } from '../../operations/responses';
import type { JsonObject } from './json';
import type { FormSerialiser } from './shared';

/**
 * A response as OpenAI's Responses API shapes it (issue 40 item 1), the same in both Forms but for `svc`, which is
 * the Form's chat completion `svc` of the same outcome. The SDKs compute `output_text` from `output`.
 */
export function responseJson(v: ResponseView, serialiser: FormSerialiser): JsonObject {
  const o = v.outcome;
  const seconds = (d: Date): number => Math.floor(d.getTime() / 1000);
  const answered = o !== null && (v.status === 'completed' || v.status === 'incomplete');
  const svc = o ? (serialiser.completion(o, v.replayed).svc as JsonObject) : undefined;
  const { settings } = v.extras;
  return {
    id: v.id,
    object: 'response',
    created_at: seconds(v.createdAt),
    completed_at: o ? seconds(new Date(o.completedAt)) : null,
    status: v.status,
    background: v.extras.background,
    model: v.model,
    instructions: v.extras.instructions,
    metadata: v.extras.metadata ?? {},
    output: answered
      ? [
          {
            type: 'message',
            id: `msg_${o.requestId}`,
            status: v.status === 'completed' ? 'completed' : 'incomplete',
            role: 'assistant',
            content: [{ type: 'output_text', text: o.answer, annotations: [] }],
          },
        ]
      : [],
    usage: o && {
      input_tokens: o.usage.promptTokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: o.usage.completionTokens,
      output_tokens_details: { reasoning_tokens: o.usage.reasoningTokens ?? 0 },
      total_tokens: o.usage.promptTokens + o.usage.completionTokens,
    },
    error: v.error,
    incomplete_details: v.status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    // What this subset does not take, as OpenAI reports it when unset; then the settings it honoured, as sent.
    tools: [],
    tool_choice: 'auto',
    parallel_tool_calls: false,
    temperature: settings?.temperature ?? null,
    top_p: settings?.topP ?? null,
    max_output_tokens: settings?.maxOutputTokens ?? null,
    previous_response_id: v.extras.previousResponseId,
    text: { format: textFormat(settings?.format ?? null) },
    // The Form's completion `svc` once there is an outcome; before, the request's id (its receipt's, once it ends).
    svc: svc ?? { request_id: v.requestId },
  };
}

/** `text.format` as the Responses API spells the answer format: the JSON schema's fields one level up. */
function textFormat(f: AnswerFormat | null): JsonObject {
  if (f === null) return { type: 'text' };
  if (f.type === 'json_object') return { type: 'json_object' };
  return { type: 'json_schema', name: f.name, schema: f.schema as JsonObject, strict: f.strict };
}

/** `GET /v1/responses/{id}/input_items`: OpenAI's list of input message items (an assistant turn as `output_text`). */
export function inputItemsJson(page: { items: InputItem[]; hasMore: boolean }): JsonObject {
  const data = page.items.map((item) => ({
    id: item.id,
    type: 'message',
    status: 'completed',
    role: item.role,
    content: [
      {
        type: item.role === 'assistant' ? 'output_text' : 'input_text',
        text: item.content,
        ...(item.role === 'assistant' && { annotations: [] }),
      },
    ],
  }));
  return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: page.hasMore };
}
