import type { ReplySchema } from '../../domain/reply-schemas';
import type { ApiKeyConfig } from '../credentials';
import type { ChatMessage, EngineSpec, Finish } from '../types';

/** What every adapter receives: limits already checked, the deadline already armed. */
export interface AdapterCall {
  spec: EngineSpec;
  messages: ChatMessage[];
  maxOutputTokens: number;
  temperature?: number;
  seed?: number;
  topP?: number;
  stop?: string[];
  /** Ask for a reply in this structure, the protocol's own way; absent when the engine cannot (the text is parsed). */
  reply?: ReplySchema;
  deadline: AbortSignal;
  signal?: AbortSignal;
}

/** What every adapter returns; cost, latency and labels are added by the dispatcher. */
export interface AdapterOutput {
  text: string;
  finish: Finish;
  tokensIn: number;
  tokensOut: number;
  reasoningTokens: number | null;
}

export interface ApiKeyTarget {
  key: ApiKeyConfig;
}

/** Providers that take the system prompt apart from the turns get all system messages joined. */
export function splitSystem(messages: readonly ChatMessage[]): { system: string | undefined; turns: ChatMessage[] } {
  const system = messages.filter((m) => m.role === 'system').map((m) => m.content);
  return { system: system.length > 0 ? system.join('\n\n') : undefined, turns: messages.filter((m) => m.role !== 'system') };
}
