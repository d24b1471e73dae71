import { Tiktoken } from 'js-tiktoken/lite';
import o200kBase from 'js-tiktoken/ranks/o200k_base';

/**
 * Prompt token counts with a real BPE tokenizer (o200k_base, the encoding of current OpenAI models).
 * Other providers tokenize differently; one well-defined count is what the input limit and quotes need.
 * The ranks ship inside the package (no network); building the encoder costs ~0.5 s, so it is built
 * once, on first use (or on `warmTokenizer()` at process start).
 */
let encoder: Tiktoken | undefined;

function getEncoder(): Tiktoken {
  encoder ??= new Tiktoken(o200kBase);
  return encoder;
}

/** Builds the encoder now, so the first request does not pay for it. */
export function warmTokenizer(): void {
  getEncoder();
}

/** Token ids of `text`; special-token strings in user text are encoded as plain text, never rejected. */
export function encodeTokens(text: string): number[] {
  return getEncoder().encode(text, [], []);
}

export function decodeTokens(tokens: number[]): string {
  return getEncoder().decode(tokens);
}

export function countTokens(text: string): number {
  return text.length === 0 ? 0 : encodeTokens(text).length;
}

export interface TokenizedMessage {
  role: string;
  content: string;
}

/** Chat framing as OpenAI documents it: 3 tokens per message, 1 for the role, 3 to prime the reply. */
const PER_MESSAGE = 4;
const REPLY_PRIMING = 3;

export function countMessagesTokens(messages: readonly TokenizedMessage[]): number {
  let total = REPLY_PRIMING;
  for (const m of messages) total += PER_MESSAGE + countTokens(m.content);
  return total;
}
