import type { ChatMessage } from '../domain/messages';
import type { Tier } from '../domain/modes';
import type { ReplySchema } from '../domain/reply-schemas';

export type { ChatMessage, Tier };
export { EngineError, type EngineErrorKind } from './errors';

/** Wire families Quorum connects to. `meta` (Llama) models run through `bedrock`; they are never offered directly. */
export type Family = 'openai' | 'anthropic' | 'google' | 'bedrock' | 'sim';
/** Who made the model: differs from the family only for models hosted on Bedrock. */
export type Maker = 'openai' | 'anthropic' | 'google' | 'meta' | 'sim';
export type Difficulty = 'light' | 'medium' | 'hard';

export interface EngineSpec {
  /**
   * `family/name`, e.g. `anthropic/claude-sonnet-4`, `bedrock/meta.llama3-3-70b-instruct`, `sim/alpha-plus`; an engine
   * from QUORUM_ENGINES_FILE has a family of its own, never a built-in one, e.g. `local/smollm2` (docs/engines.md).
   */
  id: string;
  /**
   * The id's prefix: a built-in `Family`, or a configured engine's own, which no organisation's provider key serves
   * (own keys are stored per built-in family).
   */
  family: string;
  /** A built-in `Maker`, or what a configured engine declares (by default its family). */
  maker: string;
  /** The wire protocol it is called with; a built-in engine's is its family. */
  protocol: Family;
  /** The provider's own model id, as sent on the wire. */
  model: string;
  tier: Tier;
  inputUsdPerMtok: number;
  outputUsdPerMtok: number;
  contextTokens: number;
  maxOutputTokens: number;
  /** Engine id a seat moves to when this one fails permanently; always another family (sim: another sim engine). */
  backup: string;
  /** Reasoning models take `max_completion_tokens` and no temperature (OpenAI) and report reasoning tokens. */
  reasoning: boolean;
  /** It can be asked for an answer in a JSON schema (the protocol's structured output); otherwise staff parse its text. */
  structuredOutput: boolean;
  /** A slow call may be hedged with a duplicate; off for a server that would queue the duplicate behind the original. */
  hedging: boolean;
  /** At most this many calls in flight per process; more wait for a slot until their deadline. Undefined: no limit. */
  concurrency?: number;
  /** Sim only: probability of a correct answer on a known-answer question, per difficulty. */
  skill?: Readonly<Record<Difficulty, number>>;
  /** Sim only: engines of one group give the same wrong answer to a question (correlated mistakes). */
  mistakeGroup?: string;
}

export interface KnownAnswer {
  answer: string;
  difficulty: Difficulty;
}

export interface EngineRequest {
  engineId: string;
  messages: ChatMessage[];
  maxOutputTokens: number;
  temperature?: number;
  /** A sampling seed, where the protocol takes one (OpenAI's and llama.cpp's `seed`, Gemini's `generationConfig.seed`). */
  seed?: number;
  /** Nucleus sampling and stop sequences, a caller's (issue 40), where the protocol takes them (docs/api-extensions.md). */
  topP?: number;
  stop?: string[];
  /** Staff replies: the structure to ask for, where the engine supports structured output (`structuredOutput`). */
  reply?: ReplySchema;
  /** Whole-call deadline; default QUORUM_ENGINE_TIMEOUT_MS (180 s). */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Benchmark marker with the reference answer: read only by `sim` engines, never sent to a provider. */
  knownAnswer?: KnownAnswer;
  /**
   * A hedged duplicate of a call that is running slow (1 for the duplicate): a provider serves it as any new request;
   * a `sim` engine gives the same answer but draws its latency anew, as a second request to a provider would.
   */
  attempt?: number;
  /**
   * The answer as it is written: called with each piece of text in order as the provider sends it, so a caller can
   * show it and keep it should the call be lost midway. The result's `text` is exactly the pieces joined. A protocol
   * that does not stream (Bedrock) gives the whole text in one piece once it has it. Absent: one reply, no stream.
   */
  onText?: (delta: string) => void;
  /**
   * Text an earlier attempt of this call already wrote before it was lost: sent as a final assistant turn, so the
   * engine continues it instead of starting over; the result's `text` (and its pieces) are only what comes after it.
   */
  continueFrom?: string;
}

export type Finish = 'stop' | 'length';
export type CredentialSource = 'service' | 'own_key';

export interface EngineResult {
  text: string;
  /** `length` only when the provider itself flagged truncation. */
  finish: Finish;
  tokensIn: number;
  /** Includes reasoning tokens (they are billed as output). */
  tokensOut: number;
  reasoningTokens: number | null;
  latencyMs: number;
  costMicros: number;
  source: CredentialSource;
  engineId: string;
  /** The server served more output tokens than the limit asked (it ignored the limit); they are billed as served. */
  overLimit: boolean;
}

export type Credential =
  | { kind: 'api_key'; apiKey: string; baseUrl?: string; source: CredentialSource }
  | { kind: 'bedrock_role'; roleArn: string; externalId: string; region: string; source: 'own_key' }
  | { kind: 'bedrock_service'; region: string; source: 'service' };
