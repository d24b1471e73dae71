import { decode, encode } from 'gpt-tokenizer/encoding/o200k_base';
import type { ChatMessage } from './messages';

/**
 * Prompt token counts with a real BPE tokenizer (o200k_base, the encoding of current OpenAI models), from
 * `gpt-tokenizer`: its ranks ship inside the package (no network) and take about 60 MB resident, less than half
 * of what js-tiktoken's did. Other providers tokenize differently; one well-defined count is what the input
 * limit and quotes need. The ranks load on first use, or on `warmTokenizer()` at process start.
 */
const AS_TEXT = { disallowedSpecial: new Set<string>() };

/** Loads the ranks now, so the first request does not pay for it. */
export function warmTokenizer(): void {
  encodeTokens('warm');
}

/** Token ids of `text`; special-token strings in user text are encoded as plain text, never rejected. */
export function encodeTokens(text: string): number[] {
  return encode(text, AS_TEXT);
}

export function decodeTokens(tokens: number[]): string {
  return decode(tokens);
}

/**
 * A BPE merge step can be quadratic in the length of one pre-tokenizer piece (8,000 repeated letters, one piece,
 * would block the event loop). Every whitespace after a non-space starts a new piece, so counting segment by segment
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

/** Chat framing as OpenAI documents it: 3 tokens per message, 1 for the role, 3 to prime the reply. */
const PER_MESSAGE = 4;
const REPLY_PRIMING = 3;

export function countMessagesTokens(messages: readonly ChatMessage[]): number {
  let total = REPLY_PRIMING;
  for (const m of messages) total += PER_MESSAGE + countTokens(m.content);
  return total;
}

/** A run this long may be one pre-tokenizer piece, whose merges take time quadratic in its length. */
const LONG_RUN = /\S{200}|\s{200}/;

/**
 * What the provider counted of messages it received but never reported on (a quorum's late seat, docs/money.md):
 * o200k_base over each whole message with the framing above. A message with a run long enough to be slow to encode
 * whole is counted as `countTokens` counts it, which can give a few tokens more (where punctuation meets a newline,
 * its segments split what the encoding would merge).
 */
export function countMessagesTokensAsSent(messages: readonly ChatMessage[]): number {
  let total = REPLY_PRIMING;
  for (const m of messages) total += PER_MESSAGE + (LONG_RUN.test(m.content) ? countTokens(m.content) : encodeTokens(m.content).length);
  return total;
}
