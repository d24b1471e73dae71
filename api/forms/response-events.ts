import type { StepEvent } from '../../domain/deliberation-events';
import type { AnswerPart } from '../../domain/response-stream';
import type { StreamFrame } from '../../operations/response-stream';
import type { ResponseStatus } from '../../operations/responses';
import type { JsonObject } from './json';
import { responseJson } from './responses';
import type { FormSerialiser } from './shared';

/**
 * A response's server-sent events as OpenAI's Responses API streams them (issue 40 item 2). Each deliberation step is
 * one more `response.in_progress`, its step in a `quorum` field: the Node SDK's stream helper (`responses.stream()`,
 * openai-node's ResponseAccumulator) throws on an event type it does not know, so a `quorum.*` type would end its
 * stream; every SDK takes another `response.in_progress` and keeps the field (docs/api-extensions.md).
 */
export function streamEventJson(frame: StreamFrame, serialiser: FormSerialiser): { type: string; data: JsonObject } {
  const { seq, item, view } = frame;
  const at = (type: string, fields: JsonObject): { type: string; data: JsonObject } => ({
    type,
    data: { type, sequence_number: seq, ...fields },
  });
  switch (item.kind) {
    case 'created':
      return at('response.created', { response: responseJson(view, serialiser) });
    case 'in_progress':
      return at('response.in_progress', { response: responseJson(view, serialiser) });
    case 'step':
      return at('response.in_progress', {
        response: item.answerSoFar === null ? responseJson(view, serialiser) : withAnswerBegun(view, serialiser, item.answerSoFar),
        quorum: { step: item.event.type, ...stepFields(item.event), recorded_at: item.recordedAt.toISOString() },
      });
    case 'answer':
      return answerEvent(item.part, item.text, view, serialiser, at);
    case 'error':
      return at('error', { code: view.error?.code ?? 'internal_error', message: view.error?.message ?? '', param: null });
    case 'ended':
      return at(endedType(view.status), { response: responseJson(view, serialiser) });
  }
}

/** The response as it stands once its answer has begun: its one message in progress, with the text sent so far. */
function withAnswerBegun(view: StreamFrame['view'], serialiser: FormSerialiser, text: string): JsonObject {
  return { ...responseJson(view, serialiser), output: [messageInProgress(view, text)] };
}

function messageInProgress(view: StreamFrame['view'], text: string): JsonObject {
  return {
    type: 'message',
    id: `msg_${view.requestId}`,
    status: 'in_progress',
    role: 'assistant',
    content: [{ type: 'output_text', text, annotations: [] }],
  };
}

/**
 * The last event: OpenAI's lifecycle events, which the SDKs' helpers know. A cancelled response ends
 * `response.incomplete` (it ended without its answer, and no SDK knows a `response.cancelled`), its status `cancelled`.
 */
function endedType(status: ResponseStatus): string {
  if (status === 'completed' || status === 'failed') return `response.${status}`;
  return 'response.incomplete';
}

/** A step's fields under OpenAI's spelling (snake case); its `type` is the event's. */
function stepFields(e: StepEvent): JsonObject {
  switch (e.type) {
    case 'classified':
      return { lane: e.lane, depth: e.depth };
    case 'grounded':
      return { fired: e.fired, snippets: e.snippets };
    case 'seat_answered':
      return { round: e.round, seat: e.role, model: e.model, seats_answered: e.seatsAnswered, seats: e.seats, ended_at: e.endedAt };
    case 'judged':
      return { round: e.round, judged_by: e.judgedBy, converged: e.converged, ended_at: e.endedAt };
    case 'critique_round':
      return { round: e.round, seats: e.seats };
    case 'synthesising':
      return {};
    case 'aggregated':
      return { method: e.method, decided_by: e.decidedBy, early_stop: e.earlyStop, votes: e.votes, seats: e.seats };
  }
}

/**
 * The answer as one output message with one text part, in OpenAI's order of events; its first events may come while
 * the call runs (the answer streamed as it is written), so the message is the response's once it has ended, and until
 * then one in progress under the id it will have.
 */
function answerEvent(
  part: AnswerPart,
  text: string,
  view: StreamFrame['view'],
  serialiser: FormSerialiser,
  at: (type: string, fields: JsonObject) => { type: string; data: JsonObject },
): { type: string; data: JsonObject } {
  const itemId = `msg_${view.requestId}`;
  // While the call runs its message is the one in progress; once answered, the response's own.
  const message = ((responseJson(view, serialiser).output as JsonObject[] | undefined) ?? [])[0] ?? messageInProgress(view, text);
  const place = { item_id: itemId, output_index: 0, content_index: 0 };
  const textPart = (t: string): JsonObject => ({ type: 'output_text', text: t, annotations: [] });
  switch (part) {
    case 'item_added':
      return at('response.output_item.added', { output_index: 0, item: { ...message, status: 'in_progress', content: [] } });
    case 'part_added':
      return at('response.content_part.added', { ...place, part: textPart('') });
    case 'delta':
      return at('response.output_text.delta', { ...place, delta: text, logprobs: [] });
    case 'text_done':
      return at('response.output_text.done', { ...place, text, logprobs: [] });
    case 'part_done':
      return at('response.content_part.done', { ...place, part: textPart(text) });
    case 'item_done':
      return at('response.output_item.done', { output_index: 0, item: message });
  }
}
