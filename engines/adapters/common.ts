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
  /** The answer's pieces as the provider writes them (`EngineRequest.onText`); absent, the reply is not streamed. */
  onText?: (delta: string) => void;
  /** Text an earlier attempt wrote, for the engine to continue (`EngineRequest.continueFrom`). */
  continueFrom?: string;
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

export interface Continuation {
  /** The messages to send: the call's, then the earlier text as a final assistant turn. */
  messages: ChatMessage[];
  /** Each piece of the engine's text, in order, read as what follows the earlier text. */
  after(piece: string): string;
}

/**
 * The messages that make the engine continue what an earlier attempt wrote (`continueFrom`). `trimmed`: the protocol
 * refuses a final assistant turn that ends in whitespace (Anthropic's), so it is sent without; the engine then
 * writes that whitespace itself, and it is dropped from the start of its text so the text still follows the earlier
 * one as that was written.
 */
export function continuation(call: AdapterCall, trimmed = false): Continuation {
  const earlier = call.continueFrom ?? '';
  const sent = trimmed ? earlier.trimEnd() : earlier;
  let unsent = earlier.slice(sent.length);
  return {
    messages: sent === '' ? call.messages : [...call.messages, { role: 'assistant', content: sent }],
    after: (piece) => {
      let i = 0;
      while (unsent !== '' && i < piece.length && piece[i] === unsent[0]) {
        unsent = unsent.slice(1);
        i += 1;
      }
      if (i < piece.length) unsent = '';
      return piece.slice(i);
    },
  };
}

/** A streamed reply's text so far: each piece the engine writes is read after the continued text and handed on. */
export function streamedText(cont: Continuation, onText: (delta: string) => void): { write(piece: string): void; text(): string } {
  let text = '';
  return {
    write: (piece) => {
      const delta = cont.after(piece);
      if (delta === '') return;
      text += delta;
      onText(delta);
    },
    text: () => text,
  };
}
