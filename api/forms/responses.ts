import type { ResponseView } from '../../operations/responses';
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
    // What this subset does not take, as OpenAI reports it when unset.
    tools: [],
    tool_choice: 'auto',
    parallel_tool_calls: false,
    temperature: null,
    top_p: null,
    max_output_tokens: null,
    previous_response_id: null,
    text: { format: { type: 'text' } },
    // The Form's completion `svc` once there is an outcome; before, the request's id (its receipt's, once it ends).
    svc: svc ?? { request_id: v.requestId },
  };
}
