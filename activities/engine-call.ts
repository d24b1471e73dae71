import { createHash } from 'node:crypto';
import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import type { Lane } from '../domain/classifier';
import type { ChatMessage } from '../domain/messages';
import { engineCostMicros } from '../domain/pricing';
import { countMessagesTokensAsSent } from '../domain/tokens';
import type { ReplySchema } from '../domain/reply-schemas';
import type { CallSource } from '../domain/outcome';
import { getProviderCredential, type ProviderFamily } from '../db/repositories/provider-credentials';
import type { Credential, Engines, Family, KnownAnswer } from '../engines';
import { isEngineError } from '../engines';
import type { ActivityDeps } from './deps';
import { openAnswerWriter, type AnswerStream } from './answer-stream';
import { joinRound, lateFailure } from './quorum-rounds';

export interface EngineCallInput {
  orgId: string;
  engineId: string;
  ownKey: boolean;
  messages: ChatMessage[];
  maxOutputTokens: number;
  /** A run's reference answer: read only by `sim` engines, never sent to a provider (see engines/types.ts). */
  knownAnswer?: KnownAnswer;
  /** 1 for a hedged duplicate of a slow call (see engines/types.ts). */
  attempt?: number;
  /** A tuned seat's sampling (domain/modes.ts SeatTuning); absent: the provider's defaults. */
  temperature?: number;
  seed?: number;
  /** A caller's nucleus sampling and stop sequences (issue 40); absent: the provider's defaults. */
  topP?: number;
  stop?: string[];
  /** A staff call's reply structure, or the caller's `response_format` on a call that writes the answer (see domain/reply-schemas.ts). */
  reply?: ReplySchema;
  /** A seat call of a quorum round (activities/quorum-rounds.ts): the round's grace may cut it. */
  quorumRound?: string;
  /** Labels for the worker's metrics (worker/metrics.ts), no effect on the call: the call's lane and round. */
  lane?: Lane;
  round?: number;
  /** The call writes a watched deliberation's answer: its text is stored as it arrives, and a retry continues it (issue 53 item 4). */
  stream?: AnswerStream;
}

export interface EngineCallResult {
  engineId: string;
  text: string;
  finish: 'stop' | 'length';
  tokensIn: number;
  tokensOut: number;
  reasoningTokens: number | null;
  latencyMs: number;
  costMicros: number;
  source: CallSource;
  startedAt: string;
  endedAt: string;
  /** More output than the limit asked (see engines/types.ts); counted by the worker's metrics. */
  overLimit?: boolean;
}

type CallResultBesideText = Omit<EngineCallResult, 'text'>;

/**
 * Which call this is, the same for every execution of it: a hedged duplicate (`attempt`) asks for the same answer, a
 * cut answer's retry with more room (another `maxOutputTokens`) is another call, going on from it.
 */
function callName(input: EngineCallInput): string {
  return createHash('sha256')
    .update(JSON.stringify({ ...input, attempt: undefined }))
    .digest('base64url');
}

const HEARTBEAT_EVERY_MS = 2_000;
/** Why an attempt's answer was not taken: receipts may show it, so it names no attempt or worker. */
const ANSWER_PLACE_TAKEN = 'another attempt of this call was writing its answer; tried again from what it wrote';

/** The failure type the workflow reads as "this engine cannot answer: move to the backup". */
export const ENGINE_PERMANENT = 'EnginePermanent';
/** A hedged duplicate not sent: its engine is configured with `hedging: false`. */
export const HEDGE_DECLINED = 'HedgeDeclined';

function keyedFamily(family: Family): ProviderFamily | undefined {
  return family === 'sim' ? undefined : family;
}

/**
 * One provider call as an activity. Retryable failures are thrown for Temporal's retry policy (honouring the
 * provider's retry-after); permanent ones are non-retryable `EnginePermanent` failures the workflow answers with a
 * backup. Registered under several names (`seat`, `judge`, `synthesize`, `ballot`, `runJudge`) so each step is named in history.
 */
export function createEngineCall(deps: Pick<ActivityDeps, 'db' | 'engines' | 'box' | 'log'>) {
  const { db, engines, box, log } = deps;
  return async (input: EngineCallInput): Promise<EngineCallResult> => {
    // A duplicate for an engine that must not be hedged (a single-slot server would queue it behind the original)
    // sends nothing. The hedge ignores a duplicate's failure while the original is out (workflows/hedge.ts), so the
    // original's answer, or its own failure, decides at once: no slot held and no backup delayed waiting on this one.
    if (input.attempt === 1 && !engines.spec(input.engineId).hedging)
      throw ApplicationFailure.nonRetryable('not sent: hedging is off for this engine, the first request answers', HEDGE_DECLINED);
    let credential: Credential | undefined;
    if (input.ownKey) {
      const family = keyedFamily(engines.spec(input.engineId).protocol);
      const stored = family ? await getProviderCredential(db, box, input.orgId, family) : undefined;
      if (!stored) throw ApplicationFailure.nonRetryable("the organisation's own key was removed", ENGINE_PERMANENT);
      // Decrypted here and only here; it never enters workflow history.
      credential =
        stored.kind === 'api_key'
          ? { kind: 'api_key', apiKey: stored.apiKey, source: 'own_key' }
          : {
              kind: 'bedrock_role',
              roleArn: stored.roleArn,
              externalId: stored.externalId,
              region: engines.roleRegion,
              source: 'own_key',
            };
    }
    const startedAt = new Date().toISOString();
    const round = input.quorumRound === undefined ? undefined : joinRound(input.quorumRound);
    const cancelled = Context.current().cancellationSignal;
    // Heartbeats let Temporal notice within seconds that a worker died mid-call, instead of at the 200 s timeout (a
    // local activity has none: its workflow task's timeout does that).
    const heartbeat = Context.current().info.isLocal ? undefined : setInterval(() => Context.current().heartbeat(), HEARTBEAT_EVERY_MS);
    const writer = input.stream && (await openAnswerWriter<CallResultBesideText>(db, log, input.orgId, input.stream, callName(input)));
    try {
      // This call returned before and its result was not recorded (its workflow task ran again): what it wrote stands.
      if (writer?.ended) return writer.ended;
      const r = await engines.call(
        {
          engineId: input.engineId,
          messages: input.messages,
          maxOutputTokens: input.maxOutputTokens,
          signal: round ? AbortSignal.any([cancelled, round.signal]) : cancelled,
          knownAnswer: input.knownAnswer,
          attempt: input.attempt,
          reply: input.reply,
          temperature: input.temperature,
          seed: input.seed,
          topP: input.topP,
          stop: input.stop,
          ...(writer && { onText: writer.onText }),
          // What an earlier attempt stored was streamed to the caller: the answer goes on from it, not again from the start.
          ...(writer?.prefix && { continueFrom: writer.prefix }),
        },
        credential,
      );
      const result: CallResultBesideText = {
        engineId: r.engineId,
        finish: r.finish,
        tokensIn: r.tokensIn,
        tokensOut: r.tokensOut,
        reasoningTokens: r.reasoningTokens,
        latencyMs: r.latencyMs,
        costMicros: r.costMicros,
        source: r.source,
        startedAt,
        endedAt: new Date().toISOString(),
        ...(r.overLimit ? { overLimit: true } : {}),
      };
      // Another attempt's pieces stand where this one's were to go: its text would not be what was streamed. Tried
      // again, the call continues what is stored.
      if ((await writer?.end(result))?.taken)
        throw ApplicationFailure.create({ message: ANSWER_PLACE_TAKEN, type: 'AnswerPlaceTaken', nextRetryDelay: '1 second' });
      return { ...result, text: (writer?.prefix ?? '') + r.text };
    } catch (err) {
      // A worker stopping past its grace aborts its calls: no verdict on the provider. Handed back as a cancellation,
      // the attempt is retried on another worker (not taken for a permanent failure that moves the seat to its backup).
      if (Context.current().cancellationDetails?.workerShutdown) throw new CancelledFailure('WORKER_SHUTDOWN');
      // The workflow no longer wants the call (a hedge's loser): a cancellation, not the engine's failure.
      if (Context.current().cancellationSignal.aborted) throw new CancelledFailure('CANCELLED');
      // Its quorum's grace passed: late, not the engine's failure (the seat does not move to its backup).
      if (round?.signal.aborted) throw lateFailure();
      if (!isEngineError(err)) throw err;
      // Workflow history, receipts and (its reason part) a 503's message take the failure's line; the provider's
      // address and full text stay in the engine layer's log line.
      if (!err.retryable) throw ApplicationFailure.nonRetryable(err.line, ENGINE_PERMANENT, err.kind);
      throw ApplicationFailure.create({
        message: err.line,
        type: `Engine_${err.kind}`,
        nextRetryDelay: err.retryAfterMs,
        details: [err.kind],
      });
    } finally {
      // Every piece received is stored before the workflow hears of the call: its next step follows them in the stream.
      await writer?.flush();
      clearInterval(heartbeat);
      round?.leave();
    }
  };
}

/** A call a quorum cancelled (workflows/quorum.ts): the engine it was waiting on and what it had sent. */
export interface LateCallInput {
  engineId: string;
  ownKey: boolean;
  messages: ChatMessage[];
  /** When its round began (the workflow's clock). */
  startedAt: string;
}

/**
 * What a late seat's cancelled call is billed (docs/money.md): one reading of its prompt by the engine it was
 * waiting on, counted as the provider's tokenizer counts it, and no output, since none was returned. The provider's
 * own count of a request cut off never reaches us. Its source is the one the call ran on.
 */
export function createLateCallUsage(engines: Engines) {
  return async (input: { calls: LateCallInput[] }): Promise<EngineCallResult[]> => {
    const endedAt = new Date();
    return input.calls.map((c) => {
      const spec = engines.spec(c.engineId);
      const tokensIn = countMessagesTokensAsSent(c.messages);
      return {
        engineId: c.engineId,
        text: '',
        finish: 'stop',
        tokensIn,
        tokensOut: 0,
        reasoningTokens: null,
        latencyMs: Math.max(0, endedAt.getTime() - Date.parse(c.startedAt)),
        costMicros: engineCostMicros(tokensIn, 0, spec),
        source: c.ownKey && spec.protocol !== 'sim' ? 'own_key' : 'service',
        startedAt: c.startedAt,
        endedAt: endedAt.toISOString(),
      };
    });
  };
}
