import type { AnswerChunk, StepEvent, StoredEvent } from './deliberation-events';

/**
 * A response's server-sent events (issue 40 item 2), assembled from what is stored: the response, its deliberation's
 * step events, the answer's pieces as its engine wrote them (issue 53 item 4) and its outcome. Every event's
 * `sequence_number` follows from what it is, not from when it was read, so any reader (the first stream, a resumed
 * one, after an API restart) numbers the same event the same way: `response.created` 0, `response.in_progress` 1, then
 * each step in its index's order with the answer's pieces stored after it, then the rest of the answer and the end.
 */
export type StreamItem =
  | { kind: 'created' }
  | { kind: 'in_progress' }
  /**
   * `answerSoFar`: the answer's pieces sent before this step, null when none: a step's event carries the response as
   * it stands, and the SDKs' stream helpers take it for their whole snapshot, the message begun included.
   */
  | { kind: 'step'; event: StepEvent; recordedAt: Date; answerSoFar: string | null }
  /** One of OpenAI's events of the answer's message: a delta's `text` is its piece; the others', the text in full. */
  | { kind: 'answer'; part: AnswerPart; text: string }
  /** OpenAI's `error` event: the run failed (before `response.failed`), or the stream itself could not go on. */
  | { kind: 'error' }
  | { kind: 'ended' };

/** OpenAI's events for one output message with one text part, in their order; a delta per piece of the answer. */
export const ANSWER_PARTS = ['item_added', 'part_added', 'delta', 'text_done', 'part_done', 'item_done'] as const;
export type AnswerPart = (typeof ANSWER_PARTS)[number];

export interface StreamState {
  /** The step events stored so far, in any order. */
  stored: readonly StoredEvent[];
  /** The answer's pieces stored so far, in any order (none: the answer is sent whole when the call ends). */
  chunks: readonly AnswerChunk[];
  /** How the request ended, and its answer (empty when it has none); null while it runs. */
  ended: null | { answered: boolean; failed: boolean; answer: string };
  /**
   * The request ended but its last index was never written (a worker that died between its last step and the end,
   * or a database that refused the write): end the stream after the steps in hand.
   */
  giveUp: boolean;
}

export interface StreamPlan {
  items: { seq: number; item: StreamItem }[];
  /** The stream's last event is in `items`. */
  finished: boolean;
}

export function streamPlan(state: StreamState): StreamPlan {
  const byIndex = new Map(state.stored.map((s) => [s.index, s]));
  const pieces = piecesByStep(state.chunks);
  const items: StreamPlan['items'] = [];
  const push = (item: StreamItem): void => {
    items.push({ seq: items.length, item });
  };
  const answer = (part: AnswerPart, text: string): void => push({ kind: 'answer', part, text });
  let streamed = '';
  let opened = false;
  const open = (): void => {
    if (opened) return;
    opened = true;
    answer('item_added', '');
    answer('part_added', '');
  };
  push({ kind: 'created' });
  push({ kind: 'in_progress' });
  // Only an unbroken run of indices: a later one stored first (two steps of one workflow activation are written at
  // once) waits for the one before it, so a step is never sent after a later one; a step's pieces follow it.
  let k = 0;
  for (let s = byIndex.get(k); s && s.event.type !== 'ended'; s = byIndex.get(++k)) {
    push({ kind: 'step', event: s.event, recordedAt: s.recordedAt, answerSoFar: streamed.length > 0 ? streamed : null });
    for (const text of pieces.get(k) ?? []) {
      // A call's result between its pieces and a later call's (migration 039) reads as an empty piece.
      if (text === '') continue;
      open();
      answer('delta', text);
      streamed += text;
    }
  }
  const closed = byIndex.get(k)?.event.type === 'ended' || state.giveUp;
  if (!state.ended || !closed) return { items, finished: false };
  const { answered, failed, answer: text } = state.ended;
  // Only an answer is closed with its done events: a call that failed or was cancelled after its answer began ends
  // with the pieces sent (its response has no output), as a failed OpenAI stream does.
  if (answered) {
    // The pieces sent begin the answer: what follows them is one more delta (all of it when none was sent). Pieces
    // that do not begin it (a writer lost for good mid-answer, `quorum audit` reports it) are not sent again.
    if (!opened) {
      open();
      answer('delta', text);
    } else if (text.startsWith(streamed) && text.length > streamed.length) answer('delta', text.slice(streamed.length));
    for (const part of ['text_done', 'part_done', 'item_done'] as const) answer(part, text);
  }
  if (failed) push({ kind: 'error' });
  push({ kind: 'ended' });
  return { items, finished: true };
}

/** Each step's pieces in order, as far as they run unbroken from part 0 (a later part stored first waits). */
function piecesByStep(chunks: readonly AnswerChunk[]): Map<number, string[]> {
  const byPlace = new Map(chunks.map((c) => [`${c.step}:${c.part}`, c.text]));
  const steps = new Map<number, string[]>();
  for (const step of new Set(chunks.map((c) => c.step))) {
    const texts: string[] = [];
    for (let part = 0, text = byPlace.get(`${step}:0`); text !== undefined; text = byPlace.get(`${step}:${++part}`)) texts.push(text);
    steps.set(step, texts);
  }
  return steps;
}
