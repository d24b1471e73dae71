import { ApplicationFailure } from '@temporalio/activity';
import http from 'node:http';
import https from 'node:https';
import { getRun } from '../db/repositories/runs';
import { signingSecret } from '../db/repositories/webhook-secrets';
import { runEndedEvent } from '../domain/run-event';
import { ENDED_STATES } from '../domain/runs';
import { EVENT_ID_HEADER, SIGNATURE_HEADER, signatureHeader } from '../domain/webhook-signature';
import { assertPublicCallbackHost, CallbackAddressRefused, guardedLookup, hostOf } from '../infra/callback-address';
import type { ActivityDeps } from './deps';

/**
 * Completion callbacks (issue 28 item 6): one attempt of POSTing a run's `run.ended` event, signed, to the URL its
 * launch named. Temporal retries an attempt that fails (workflows/run-callback.ts has the policy); this decides which
 * failures are worth a retry: a 2xx is delivered, a 4xx other than 408 and 429 is the receiver's refusal (final),
 * anything else (5xx, 3xx, a timeout, a connection refused) is tried again.
 */

/** The receiver has this long to answer an attempt (headers); its body is not read. */
export const CALLBACK_ATTEMPT_TIMEOUT_MS = 10_000;

/** Failure types that end a delivery without a retry. */
export const CALLBACK_REFUSED = 'callback_refused';
export const CALLBACK_ADDRESS_REFUSED = 'callback_address_refused';

export interface RunCallback {
  runId: string;
  orgId: string;
  url: string;
}

export interface Delivery {
  eventId: string;
  status: number;
}

/** POSTs `body` once, signed now; resolves with the receiver's status or rejects on a network failure or timeout. */
function post(url: URL, body: string, headers: Record<string, string>, production: boolean): Promise<number> {
  const send = url.protocol === 'https:' ? https.request : http.request;
  return new Promise((resolve, reject) => {
    const req = send(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        lookup: guardedLookup(production),
        signal: AbortSignal.timeout(CALLBACK_ATTEMPT_TIMEOUT_MS),
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * One signed attempt. Throws a non-retryable failure for a refusal (the receiver's 4xx, or an address refused in
 * production), a retryable one for any other answer; a network error passes through (retried).
 */
export async function sendSigned(input: {
  url: string;
  body: string;
  eventId: string;
  secret: string;
  production: boolean;
  nowS?: number;
}): Promise<number> {
  const url = new URL(input.url);
  const t = input.nowS ?? Math.floor(Date.now() / 1000);
  let status: number;
  try {
    await assertPublicCallbackHost(url, input.production);
    status = await post(
      url,
      input.body,
      {
        'content-type': 'application/json',
        'user-agent': 'Quorum-Webhooks/1',
        [SIGNATURE_HEADER]: signatureHeader(input.secret, t, input.body),
        [EVENT_ID_HEADER]: input.eventId,
      },
      input.production,
    );
  } catch (err) {
    const refused = err instanceof CallbackAddressRefused ? err : (err as { cause?: unknown }).cause;
    if (refused instanceof CallbackAddressRefused) throw ApplicationFailure.nonRetryable(refused.message, CALLBACK_ADDRESS_REFUSED);
    throw err;
  }
  if (status >= 200 && status < 300) return status;
  const message = `the receiver at ${hostOf(url)} answered ${status}`;
  if (status >= 400 && status < 500 && status !== 408 && status !== 429) throw ApplicationFailure.nonRetryable(message, CALLBACK_REFUSED);
  throw ApplicationFailure.retryable(message, 'callback_failed');
}

export function createCallbackActivities(deps: Pick<ActivityDeps, 'db' | 'log' | 'config' | 'box'>) {
  const { config } = deps;
  return {
    /**
     * The ended run's event, built from its row (the same bytes on every attempt), signed with the organisation's
     * secret as it is now (a rotation applies to the retries that follow it).
     */
    async deliverRunCallback(input: RunCallback): Promise<Delivery> {
      const run = await getRun(deps.db, input.runId);
      if (!ENDED_STATES.includes(run.state)) throw new Error(`run ${input.runId} has not ended (${run.state})`);
      const event = runEndedEvent(run);
      try {
        const status = await sendSigned({
          url: input.url,
          body: JSON.stringify(event),
          eventId: event.id,
          secret: await signingSecret(deps.db, deps.box, input.orgId),
          production: config.QUORUM_ENV === 'production',
        });
        return { eventId: event.id, status };
      } catch (err) {
        if (err instanceof ApplicationFailure && err.nonRetryable)
          deps.log.warn('run callback refused; not retried', { runId: input.runId, eventId: event.id, reason: err.message });
        throw err;
      }
    },
  };
}

export type CallbackActivities = ReturnType<typeof createCallbackActivities>;
