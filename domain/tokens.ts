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

/**
 * The BPE merge step is quadratic in the length of one pre-tokenizer piece (8,000 repeated letters take seconds,
 * blocking the event loop). Every whitespace after a non-space starts a new piece, so counting segment by segment
 * at those points gives the same result; a segment longer than `MAX_SEGMENT` (no real word is) is counted in
 * slices, which can only add a token per slice. The work is then linear in the text.
 */
const SEGMENT_BOUNDARY = /(?<=\S)(?=\s)/;
const MAX_SEGMENT = 32;

export function countTokens(text: string): number {
  if (text.length === 0) return 0;
  let total = 0;
  for (const segment of text.split(SEGMENT_BOUNDARY)) {
    for (let i = 0; i < segment.length; i += MAX_SEGMENT) total += encodeTokens(segment.slice(i, i + MAX_SEGMENT)).length;
  }
  return total;
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
