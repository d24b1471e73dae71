import type { StepEvent, StoredEvent } from './deliberation-events';

/**
 * A response's server-sent events (issue 40 item 2), assembled from what is stored: the response, its deliberation's
 * step events and its outcome. Every event's `sequence_number` follows from what it is, not from when it was read, so
 * any reader (the first stream, a resumed one, after an API restart) numbers the same event the same way:
 * `response.created` 0, `response.in_progress` 1, the step stored under index k 2 + k, then the answer and the end.
 */
export type StreamItem =
  | { kind: 'created' }
  | { kind: 'in_progress' }
  | { kind: 'step'; event: StepEvent; recordedAt: Date }
  | { kind: 'answer'; part: AnswerPart }
  /** OpenAI's `error` event: the run failed (before `response.failed`), or the stream itself could not go on. */
  | { kind: 'error' }
  | { kind: 'ended' };

/** OpenAI's events for one output message with one text part, in their order; the answer is one delta. */
export const ANSWER_PARTS = ['item_added', 'part_added', 'delta', 'text_done', 'part_done', 'item_done'] as const;
export type AnswerPart = (typeof ANSWER_PARTS)[number];

export interface StreamState {
  /** The step events stored so far, in any order. */
  stored: readonly StoredEvent[];
  /** How the request ended; null while it runs. */
  ended: null | { answered: boolean; failed: boolean };
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
  const items: StreamPlan['items'] = [
    { seq: 0, item: { kind: 'created' } },
    { seq: 1, item: { kind: 'in_progress' } },
  ];
  // Only an unbroken run of indices: a later one stored first (two steps of one workflow activation are written at
  // once) waits for the one before it, so a step is never sent after a later one.
  let k = 0;
  for (let s = byIndex.get(k); s && s.event.type !== 'ended'; s = byIndex.get(++k))
    items.push({ seq: 2 + k, item: { kind: 'step', event: s.event, recordedAt: s.recordedAt } });
  const closed = byIndex.get(k)?.event.type === 'ended' || state.giveUp;
  if (!state.ended || !closed) return { items, finished: false };
  let seq = 2 + k;
  if (state.ended.answered) for (const part of ANSWER_PARTS) items.push({ seq: seq++, item: { kind: 'answer', part } });
  if (state.ended.failed) items.push({ seq: seq++, item: { kind: 'error' } });
  items.push({ seq, item: { kind: 'ended' } });
  return { items, finished: true };
}
