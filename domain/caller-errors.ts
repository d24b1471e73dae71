/**
 * What a caller reads when a call fails on the service's side (5xx): the seat or step, the engine once and a short
 * reason, never a provider's address, a key or a provider's own error text, and at most about 300 characters (issue
 * 27). The full detail is in the worker's log; a receipt's `seats_unavailable` / `substitutions` reasons carry the
 * engine's failure line: its short reason and, after `SAID`, what the provider said, with addresses removed.
 */

/** Spec 01 leaves the length open; 300 reads in one glance and fits every seat of a three-seat panel. */
export const CALLER_MESSAGE_MAX = 300;

/** Between an engine failure's caller-safe reason and what the provider said (receipts only). */
const SAID = ' — provider said: ';
const SAID_MAX = 160;

const ADDRESSES: readonly RegExp[] = [
  // URLs first, whole: scheme, host, port, path and query.
  /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>)\]]+/gi,
  // IPv6 in brackets, with or without a port.
  /\[[0-9a-f:.]+\](?::\d+)?/gi,
  // IPv4, with or without a port.
  /\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b/g,
  // A host and port: localhost:8080, db.internal:5432.
  /\b(?:localhost|[a-z0-9-]+(?:\.[a-z0-9-]+)+):\d{2,5}\b/gi,
];

/** The text with every URL, IP address and host:port replaced by `[address]`. */
export function withoutAddresses(text: string): string {
  return ADDRESSES.reduce((out, re) => out.replace(re, '[address]'), text);
}

/** Cut to `max` characters at a word, marked with an ellipsis. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = text.slice(0, max - 1);
  const space = head.lastIndexOf(' ');
  return `${space > max / 2 ? head.slice(0, space) : head}…`;
}

/** A 5xx message as the caller gets it: no address, whitespace collapsed, at most CALLER_MESSAGE_MAX characters. */
export function callerMessage(text: string): string {
  return cut(withoutAddresses(text).replace(/\s+/g, ' ').trim(), CALLER_MESSAGE_MAX);
}

/** An engine's failure line: its short reason, then (receipts only) what the provider said, without addresses. */
export function failureLine(reason: string, said: string | undefined): string {
  const words = said && withoutAddresses(said).replace(/\s+/g, ' ').trim();
  return words ? `${reason}${SAID}${cut(words, SAID_MAX)}` : reason;
}

/** The caller-safe part of a failure line (`engine: reason — provider said: …` → `engine: reason`). */
export function callerReason(line: string): string {
  const at = line.indexOf(SAID);
  return withoutAddresses(at < 0 ? line : line.slice(0, at));
}

/**
 * 503 `mode_unavailable`'s message: each seat that could not answer and why, seats that failed alike named together
 * (`seat1, seat2 — openai/gpt-4.1: provider unreachable`), within CALLER_MESSAGE_MAX; those cut are counted.
 */
export function unavailableMessage(seats: readonly { role: string; failures: readonly string[] }[]): string {
  const groups = new Map<string, string[]>();
  for (const s of seats) {
    const why = [...new Set(s.failures.map(callerReason))].join(', then ') || 'no engine could run';
    groups.set(why, [...(groups.get(why) ?? []), s.role]);
  }
  const parts = [...groups].map(([why, roles]) => `${roles.join(', ')} — ${why}`);
  let message = 'No seat could answer; nothing was billed.';
  for (const [i, part] of parts.entries()) {
    const sep = i === 0 ? ' ' : '; ';
    const more = (n: number): string => (n > 0 ? ` (+${n} more)` : '');
    const room = CALLER_MESSAGE_MAX - message.length - sep.length - more(parts.length - i - 1).length;
    // The first seat's reason is always said, cut if need be; a later one that does not fit is counted instead.
    if (i > 0 && part.length > room) return `${message}${more(parts.length - i)}`;
    message += sep + cut(part, room);
  }
  return callerMessage(message);
}
