import { WorkflowNotFoundError } from '@temporalio/client';
import type { AuthContext } from '../db/repositories/api-keys';
import { deleteStoredAnswer, findResponse, recordResponse, type ResponseExtras, type ResponseRow } from '../db/repositories/responses';
import { QuorumError } from '../domain/errors';
import type { Outcome } from '../domain/outcome';
import { IdempotencyKeySchema } from './requests/common';
import type { ResponseRequest } from './requests/responses';
import { createCompletion, derivedIdempotencyKey, type CompletionDeps } from './completion';
import { requireScope } from './checks';
import { CANCEL_WAIT_MS } from './run-cancel';

/**
 * Responses (issue 40 items 1 and 3): a response is a chat completion's deliberation (the same path, billing and
 * receipt: operations/completion.ts) addressed by its idempotency key, which names its workflow (DESIGN §4). Its id is
 * `resp_` and the key in base64url, so the id of a call is known before it runs and is only ever read within the
 * caller's organisation: another organisation's id names no request of this one (404).
 */
export type ResponseStatus = 'queued' | 'in_progress' | 'completed' | 'failed' | 'cancelled' | 'incomplete';

export interface ResponseView {
  id: string;
  /** The request running or answering it (its receipt's id); null before one is known. */
  requestId: string | null;
  /** The model as the caller named it (a mode key, or a Form B ticker). */
  model: string;
  createdAt: Date;
  status: ResponseStatus;
  /** The deliberation's outcome once it has ended with one (completed, incomplete or cancelled). */
  outcome: Outcome | null;
  replayed: boolean;
  error: { code: string; message: string } | null;
  extras: ResponseExtras;
}

const NO_EXTRAS: ResponseExtras = { instructions: null, metadata: null, background: false };

export function responseIdOf(idempotencyKey: string): string {
  return `resp_${Buffer.from(idempotencyKey, 'utf8').toString('base64url')}`;
}

function keyOfResponseId(id: string): string {
  const encoded = /^resp_([A-Za-z0-9_-]+)$/.exec(id)?.[1];
  const key = encoded === undefined ? undefined : Buffer.from(encoded, 'base64url').toString('utf8');
  if (key === undefined || !IdempotencyKeySchema.safeParse(key).success || responseIdOf(key) !== id) throw notFound(id);
  return key;
}

function notFound(id: string): QuorumError {
  return new QuorumError('response_not_found', `No response \`${id.slice(0, 300)}\` under this organisation.`, { param: 'response_id' });
}

/** What a finished outcome is as a response: an answer cut by its output limit is `incomplete`, as OpenAI says. */
function endedStatus(o: Outcome): ResponseStatus {
  if (o.status === 'cancelled') return 'cancelled';
  return o.finishReason === 'length' ? 'incomplete' : 'completed';
}

export function viewOfRow(id: string, row: ResponseRow): ResponseView {
  const base = {
    id,
    requestId: row.requestId,
    model: row.model,
    createdAt: row.createdAt,
    replayed: false,
    extras: row.extras ?? NO_EXTRAS,
  };
  if (row.outcome) return { ...base, status: endedStatus(row.outcome), outcome: row.outcome, error: null };
  if (row.state === 'running') return { ...base, status: 'in_progress', outcome: null, error: null };
  const code = row.errorCode ?? 'internal_error';
  return { ...base, status: 'failed', outcome: null, error: { code, message: `The deliberation ended without an answer (${code}).` } };
}

/** The caller's own response (404 for any other), as stored. */
export async function ownResponse(deps: CompletionDeps, auth: AuthContext, id: string): Promise<{ key: string; row: ResponseRow }> {
  requireScope(auth, 'completions');
  const key = keyOfResponseId(id);
  const row = await findResponse(deps.db, auth.orgId, key);
  if (!row || row.deleted) throw notFound(id);
  return { key, row };
}

/**
 * POST /v1/responses. Without `background` it answers when the deliberation ends, as a chat completion does; with
 * it, as soon as the workflow has started (`queued`), while this process keeps the call's concurrency slot until it
 * ends. A replay, or a call refused before it runs, answers at once either way.
 */
export async function createResponse(
  deps: CompletionDeps,
  auth: AuthContext,
  input: { request: ResponseRequest; idempotencyKey?: string },
): Promise<ResponseView> {
  const { request } = input;
  const idempotencyKey =
    input.idempotencyKey ?? derivedIdempotencyKey(auth.orgId, auth.keyId, request.completion, { metadata: request.metadata });
  const id = responseIdOf(idempotencyKey);
  const extras: ResponseExtras = { instructions: request.instructions, metadata: request.metadata, background: request.background };
  let started: (requestId: string) => void = () => undefined;
  const startedId = new Promise<string>((resolve) => (started = resolve));
  const done = createCompletion(deps, auth, {
    body: request.completion,
    idempotencyKey,
    onStarted: async (requestId) => {
      await recordResponse(deps.db, { requestId, orgId: auth.orgId, ...extras });
      started(requestId);
    },
  });
  const view = (o: Outcome, replayed: boolean): ResponseView => ({
    id,
    requestId: o.requestId,
    model: request.completion.model,
    createdAt: new Date(o.createdAt),
    status: endedStatus(o),
    outcome: o,
    replayed,
    error: null,
    extras,
  });
  // A stream answers from what is stored (operations/response-stream.ts) as a background response is polled.
  if (!request.background && !request.stream) {
    const { outcome, replayed } = await done;
    if (!request.store) await deleteStoredAnswer(deps.db, { requestId: outcome.requestId, orgId: auth.orgId });
    return view(outcome, replayed);
  }
  const first = await Promise.race([done.then((d) => ({ done: d })), startedId.then((requestId) => ({ requestId }))]);
  if ('done' in first) return view(first.done.outcome, first.done.replayed);
  // The workflow settles and records the call whatever happens here; a failure is read from its request by a poll.
  done.catch(() => undefined);
  return {
    id,
    requestId: first.requestId,
    model: request.completion.model,
    createdAt: new Date(),
    status: 'queued',
    outcome: null,
    replayed: false,
    error: null,
    extras,
  };
}

/** GET /v1/responses/{id}. */
export async function retrieveResponse(deps: CompletionDeps, auth: AuthContext, id: string): Promise<ResponseView> {
  const { row } = await ownResponse(deps, auth, id);
  return viewOfRow(id, row);
}

const CANCEL_POLL_MS = 200;

/**
 * POST /v1/responses/{id}/cancel (issue 40 item 3): the workflow is cancelled, which aborts the engine calls in flight;
 * it bills what answered, releases the rest of its hold and ends `cancelled` (workflows/deliberation.ts). Answers once
 * the request has ended (or after CANCEL_WAIT_MS, still `in_progress`); one that had ended is returned unchanged.
 */
export async function cancelResponse(deps: CompletionDeps, auth: AuthContext, id: string, waitMs = CANCEL_WAIT_MS): Promise<ResponseView> {
  const { key, row } = await ownResponse(deps, auth, id);
  if (row.state !== 'running') return viewOfRow(id, row);
  try {
    await deps.client.workflow.getHandle(row.workflowId).cancel();
  } catch (err) {
    // It closed between the read and the cancel (it ended by itself): the row says how.
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
  const until = Date.now() + waitMs;
  for (;;) {
    const now = (await findResponse(deps.db, auth.orgId, key)) ?? row;
    if (now.state !== 'running' || Date.now() >= until) return viewOfRow(id, now);
    await new Promise((resolve) => setTimeout(resolve, CANCEL_POLL_MS));
  }
}

/** DELETE /v1/responses/{id}: a running response must be cancelled first (409); its figures stay on its receipt. */
export async function deleteResponse(deps: CompletionDeps, auth: AuthContext, id: string): Promise<{ id: string }> {
  const { row } = await ownResponse(deps, auth, id);
  if (row.state === 'running')
    throw new QuorumError('request_in_progress', 'This response is still running; cancel it first, then delete it.', {
      requestId: row.requestId,
    });
  await deleteStoredAnswer(deps.db, { requestId: row.requestId, orgId: auth.orgId });
  return { id };
}
