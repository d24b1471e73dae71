import type { AuthContext } from '../db/repositories/api-keys';
import { readDeliberationEvents } from '../db/repositories/deliberation-events';
import { findResponse } from '../db/repositories/responses';
import { streamPlan, type StreamItem } from '../domain/response-stream';
import type { CompletionDeps } from './completion';
import { listening } from './deliberation-events';
import { ownResponse, viewOfRow, type ResponseView } from './responses';

/**
 * A request that has ended but whose last step index is not stored after this long ends its stream with the steps in
 * hand (domain/response-stream.ts `giveUp`): the worker writes that index milliseconds after the request ends.
 */
const ENDED_GRACE_MS = 3_000;

/** One server-sent event: its number, what it is, and the response as it stands for it. */
export interface StreamFrame {
  seq: number;
  item: StreamItem;
  view: ResponseView;
}

/** The response as the events before its answer show it, whatever it is now: running, no outcome yet. */
function runningView(v: ResponseView, item: StreamItem): ResponseView {
  const status = item.kind === 'created' && v.extras.background ? 'queued' : 'in_progress';
  return { ...v, status, outcome: null, error: null, replayed: false };
}

/** Writes one event to the caller; resolves once it is handed to the connection. */
export type Send = (frame: StreamFrame) => Promise<void>;

/**
 * `stream: true` and `GET /v1/responses/{id}?stream=true&starting_after=N` (issue 40 item 2): the response's events
 * after `startingAfter` (all without it), as they happen, until its last. Read from what is stored (the response, its
 * step events, its outcome), so a stream resumed on any API process, after a restart too, continues where the cut one
 * stopped with nothing lost or repeated. Throws (404) before the first event if the response is not the caller's;
 * the function it returns sends the events until the last is sent or `stop` aborts.
 */
export async function openResponseStream(
  deps: CompletionDeps,
  auth: AuthContext,
  id: string,
  startingAfter: number | null,
): Promise<(send: Send, stop: AbortSignal) => Promise<void>> {
  const { key, row: first } = await ownResponse(deps, auth, id);
  const { requestId } = first;
  return (send, stop) =>
    listening(deps.db, requestId, stop, async (wait) => {
      let last = startingAfter ?? -1;
      let endedSeenAt: number | null = null;
      while (!stop.aborted) {
        const row = (await findResponse(deps.db, auth.orgId, key)) ?? first;
        const view = viewOfRow(id, row);
        const ended = row.state === 'running' ? null : { answered: view.status === 'completed' || view.status === 'incomplete' };
        if (ended) endedSeenAt ??= Date.now();
        const stored = await readDeliberationEvents(deps.db, requestId);
        const plan = streamPlan({ stored, ended, giveUp: endedSeenAt !== null && Date.now() - endedSeenAt >= ENDED_GRACE_MS });
        for (const { seq, item } of plan.items) {
          if (seq <= last || stop.aborted) continue;
          await send({ seq, item, view: item.kind === 'answer' || item.kind === 'ended' ? view : runningView(view, item) });
          last = seq;
        }
        if (plan.finished) return;
        await wait();
      }
    });
}
