import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { KeyPrincipal } from './principal';
import {
  deleteStoredAnswer,
  findResponse,
  recordResponse,
  type ResponseExtras,
  type ResponseRow,
  type ResponseSettings,
} from '../db/repositories/responses';
import { retentionDaysOf } from '../db/repositories/retention';
import { QuorumError } from '../domain/errors';
import type { ChatMessage } from '../domain/messages';
import type { Outcome } from '../domain/outcome';
import { IdempotencyKeySchema } from './requests/common';
import type { ResponseRequest } from './requests/responses';
import { createCompletion } from './completion';
import type { OperationDeps } from './deps';
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

const NO_EXTRAS: ResponseExtras = {
  instructions: null,
  metadata: null,
  background: false,
  settings: null,
  input: null,
  previousResponseId: null,
};

/** What the call was honoured with, read back from the one representation the completion parsed. */
function settingsOf(request: ResponseRequest): ResponseSettings {
  const answer = request.completion.options?.answer;
  return {
    temperature: answer?.sampling?.temperature ?? null,
    topP: answer?.sampling?.topP ?? null,
    maxOutputTokens: answer?.maxOutputTokens ?? null,
    format: answer?.format ?? null,
  };
}

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
export async function ownResponse(deps: OperationDeps, auth: KeyPrincipal, id: string): Promise<{ key: string; row: ResponseRow }> {
  requireScope(auth, 'completions');
  const key = keyOfResponseId(id);
  const row = await findResponse(deps.db, auth.orgId, key);
  if (!row || row.deleted) throw notFound(id);
  return { key, row };
}

/**
 * `previous_response_id`: the earlier response's conversation and its answer come before this input, as OpenAI
 * sends them (its `instructions` are not carried over). It must be the caller's own, ended with an answer whose
 * texts are kept. Returns the completion to run and the conversation to keep with this response.
 */
async function continued(
  deps: OperationDeps,
  auth: KeyPrincipal,
  request: ResponseRequest,
): Promise<{ completion: ResponseRequest['completion']; input: ChatMessage[] }> {
  const { completion, instructions, previousResponseId } = request;
  const head = instructions ? completion.messages.slice(0, 1) : [];
  const turns = completion.messages.slice(head.length);
  if (previousResponseId === null) return { completion, input: turns };
  const param = 'previous_response_id';
  const missing = (): QuorumError =>
    new QuorumError('response_not_found', `No response \`${previousResponseId.slice(0, 300)}\` under this organisation to continue.`, {
      param,
    });
  const { row } = await ownResponse(deps, auth, previousResponseId).catch((err: unknown) => {
    throw err instanceof QuorumError && err.code === 'response_not_found' ? missing() : err;
  });
  // A chat completion's call is not a response: it kept no conversation.
  if (!row.extras) throw missing();
  const previous = viewOfRow(previousResponseId, row);
  if (previous.status !== 'completed' && previous.status !== 'incomplete')
    throw new QuorumError(
      'invalid_request',
      `Response \`${previousResponseId}\` is ${previous.status}: only a response that answered can be continued.`,
      { param },
    );
  const kept = row.extras.input;
  if (!kept || !previous.outcome || previous.outcome.transcriptDeleted)
    throw new QuorumError(
      'invalid_request',
      `Response \`${previousResponseId}\`'s texts were deleted (or never kept): send the earlier turns in \`input\`.`,
      { param },
    );
  const input: ChatMessage[] = [...kept, { role: 'assistant', content: previous.outcome.answer }, ...turns];
  return { completion: { ...completion, messages: [...head, ...input] }, input };
}

/** A create's answer: the response as it stands, and for a stream the call's own outcome once it ends. */
export interface CreatedResponse {
  view: ResponseView;
  /** The workflow's outcome as this process received it (operations/response-stream.ts `withHeldAnswer`). */
  held?: Promise<Outcome>;
}

/**
 * POST /v1/responses. Without `background` it answers when the deliberation ends, as a chat completion does; with
 * it, as soon as the workflow has started (`queued`), while this process keeps the call's concurrency slot until it
 * ends. A replay, or a call refused before it runs, answers at once either way.
 */
export async function createResponse(
  deps: OperationDeps,
  auth: KeyPrincipal,
  input: {
    request: ResponseRequest;
    idempotencyKey?: string;
    /** Aborts when the caller's connection closes before it was answered in full. */
    hangUp?: AbortSignal;
  },
): Promise<CreatedResponse> {
  const { request, hangUp } = input;
  if (request.background && (await retentionDaysOf(deps.db, auth.orgId)) === 0)
    throw new QuorumError(
      'invalid_request',
      'This organisation keeps no transcripts (retention of 0 days), so a background response could not be kept until it is polled. Send it without `background`: answered at once, or streamed with `stream: true`.',
      { param: 'background' },
    );
  // As OpenAI's: every create is a new response unless the caller names it (spec 01's derived deduplication is chat
  // completions'; evals and sampling loops send the same input on purpose).
  const idempotencyKey = input.idempotencyKey ?? `resp-${randomUUID()}`;
  const id = responseIdOf(idempotencyKey);
  const conversation = await continued(deps, auth, request);
  const extras: ResponseExtras = {
    instructions: request.instructions,
    metadata: request.metadata,
    background: request.background,
    settings: settingsOf(request),
    input: conversation.input,
    previousResponseId: request.previousResponseId,
  };
  let started: (requestId: string) => void = () => undefined;
  const startedId = new Promise<string>((resolve) => (started = resolve));
  // As on OpenAI, only a background response outlives its connection: a caller that hangs up on any other cancels
  // it (once it has started), which bills what ran and releases the rest of its hold.
  if (!request.background && hangUp)
    void startedId.then(() => {
      const cancel = (): void =>
        void cancelResponse(deps, auth, id, 0).catch((err: unknown) => deps.log.warn('hung-up response not cancelled', { id, err }));
      if (hangUp.aborted) cancel();
      else hangUp.addEventListener('abort', cancel, { once: true });
    });
  const done = createCompletion(deps, auth, {
    body: conversation.completion,
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
    return { view: view(outcome, replayed) };
  }
  const first = await Promise.race([done.then((d) => ({ done: d })), startedId.then((requestId) => ({ requestId }))]);
  const held = request.background ? undefined : done.then((d) => d.outcome);
  if ('done' in first) return { view: view(first.done.outcome, first.done.replayed), held };
  // The workflow settles and records the call whatever happens here; a failure is read from its request by a poll.
  done.catch(() => undefined);
  held?.catch(() => undefined);
  return {
    view: {
      id,
      requestId: first.requestId,
      model: request.completion.model,
      createdAt: new Date(),
      status: 'queued',
      outcome: null,
      replayed: false,
      error: null,
      extras,
    },
    held,
  };
}

/** GET /v1/responses/{id}. */
export async function retrieveResponse(deps: OperationDeps, auth: KeyPrincipal, id: string): Promise<ResponseView> {
  const { row } = await ownResponse(deps, auth, id);
  return viewOfRow(id, row);
}

const CANCEL_POLL_MS = 200;

/**
 * POST /v1/responses/{id}/cancel (issue 40 item 3): the workflow is cancelled, which aborts the engine calls in flight;
 * it bills what answered, releases the rest of its hold and ends `cancelled` (workflows/deliberation.ts). Answers once
 * the request has ended (or after CANCEL_WAIT_MS, still `in_progress`); one that had ended is returned unchanged.
 */
export async function cancelResponse(deps: OperationDeps, auth: KeyPrincipal, id: string, waitMs = CANCEL_WAIT_MS): Promise<ResponseView> {
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
export async function deleteResponse(deps: OperationDeps, auth: KeyPrincipal, id: string): Promise<{ id: string }> {
  const { row } = await ownResponse(deps, auth, id);
  if (row.state === 'running')
    throw new QuorumError('request_in_progress', 'This response is still running; cancel it first, then delete it.', {
      requestId: row.requestId,
    });
  await deleteStoredAnswer(deps.db, { requestId: row.requestId, orgId: auth.orgId });
  return { id };
}

/** One item of `GET /v1/responses/{id}/input_items`: a message of the conversation before the answer. */
export interface InputItem {
  id: string;
  role: ChatMessage['role'];
  content: string;
}

/**
 * `GET /v1/responses/{id}/input_items`: the response's conversation before its answer (a continued response's begins
 * with the earlier ones), OpenAI's page of it: `order` (default `desc`, newest first), `after` an item id, `limit`.
 * Items are numbered in conversation order, so an id names the same item on every page.
 */
export async function listInputItems(
  deps: OperationDeps,
  auth: KeyPrincipal,
  id: string,
  page: { order: 'asc' | 'desc'; after: string | null; limit: number },
): Promise<{ items: InputItem[]; hasMore: boolean }> {
  const { row } = await ownResponse(deps, auth, id);
  const input = row.extras?.input ?? [];
  const all = input.map((m, i) => ({ id: `msg_${row.requestId.slice(4)}_${i}`, role: m.role, content: m.content }));
  const ordered = page.order === 'asc' ? all : [...all].reverse();
  const start = page.after === null ? 0 : ordered.findIndex((item) => item.id === page.after) + 1;
  if (page.after !== null && start === 0)
    throw new QuorumError('invalid_request', `\`after\`: no item \`${page.after.slice(0, 100)}\` in this response's input.`, {
      param: 'after',
    });
  const items = ordered.slice(start, start + page.limit);
  return { items, hasMore: start + page.limit < ordered.length };
}
