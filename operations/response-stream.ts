import type { KeyPrincipal } from './principal';
import { readAnswerChunks, readDeliberationEvents } from '../db/repositories/deliberation-events';
import { findResponse } from '../db/repositories/responses';
import { streamPlan, type StreamItem } from '../domain/response-stream';
import type { Outcome } from '../domain/outcome';
import type { OperationDeps } from './deps';
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
  deps: OperationDeps,
  auth: KeyPrincipal,
  id: string,
  startingAfter: number | null,
  held?: Promise<Outcome>,
): Promise<(send: Send, stop: AbortSignal) => Promise<void>> {
  const { key, row: first } = await ownResponse(deps, auth, id);
  const { requestId } = first;
  return (send, stop) =>
    listening(deps.db, requestId, stop, async (wait) => {
      let last = startingAfter ?? -1;
      let endedSeenAt: number | null = null;
      let row = first;
      let notified = false;
      try {
        while (!stop.aborted) {
          const [stored, chunks] = await Promise.all([readDeliberationEvents(deps.db, requestId), readAnswerChunks(deps.db, requestId)]);
          // A step's notification needs only the steps; the response is read again once the last index is stored (the
          // request has ended by then) or when no notification came (one lost, or a call that ended without its last).
          if (!notified || stored.some((s) => s.event.type === 'ended')) row = (await findResponse(deps.db, auth.orgId, key)) ?? row;
          const view = await withHeldAnswer(viewOfRow(id, row), held);
          const ended =
            row.state === 'running'
              ? null
              : {
                  answered: view.status === 'completed' || view.status === 'incomplete',
                  failed: view.status === 'failed',
                  answer: view.outcome?.answer ?? '',
                };
          if (ended) endedSeenAt ??= Date.now();
          const plan = streamPlan({ stored, chunks, ended, giveUp: endedSeenAt !== null && Date.now() - endedSeenAt >= ENDED_GRACE_MS });
          for (const { seq, item } of plan.items) {
            if (seq <= last || stop.aborted) continue;
            const ending = item.kind === 'answer' || item.kind === 'error' || item.kind === 'ended';
            await send({ seq, item, view: ending ? view : runningView(view, item) });
            last = seq;
          }
          if (plan.finished) return;
          notified = await wait();
        }
      } catch (err) {
        // The caller is told, in OpenAI's terms, that this stream (not the response) broke, and how to go on.
        if (stop.aborted) return;
        deps.log.error('response stream failed', { responseId: id, err });
        const error = {
          code: 'internal_error',
          message: `This stream failed on the server; poll the response, or resume it with starting_after=${last}.`,
        };
        await send({ seq: last + 1, item: { kind: 'error' }, view: { ...viewOfRow(id, row), error } });
      }
    });
}

/**
 * Under zero retention the stored answer is blank by the time the call ends (migration 030): the connection that
 * created the response holds the workflow's own outcome in memory and delivers that, once, to its caller.
 */
async function withHeldAnswer(view: ResponseView, held: Promise<Outcome> | undefined): Promise<ResponseView> {
  if (!held || view.outcome?.transcriptDeleted?.reason !== 'zero_retention') return view;
  const outcome = await held.catch(() => null);
  return outcome && outcome.requestId === view.outcome.requestId ? { ...view, outcome } : view;
}
