import { QuorumError } from '../domain/errors';

/**
 * Query parameters of the paged reads (`GET /v1/runs`, a poll's `include=questions`): each misuse is 400
 * `invalid_request` naming its parameter.
 */

/** A page's size: how many unless asked, and the most a caller may ask for. */
export interface PageSize {
  default: number;
  max: number;
}

export function invalidParam(param: string, message: string): QuorumError {
  return new QuorumError('invalid_request', message, { param });
}

/** A parameter absent, or sent once as text (`?a=1&a=2` is refused rather than one of them chosen). */
export function singleParam(query: Readonly<Record<string, unknown>>, param: string): string | undefined {
  const raw = query[param];
  if (raw === undefined || typeof raw === 'string') return raw;
  throw invalidParam(param, `Send \`${param}\` once, as text.`);
}

/** `limit`: a whole number from 1 to the page's most, its default when absent. */
export function pageLimit(raw: string | undefined, size: PageSize): number {
  if (raw === undefined) return size.default;
  const n = /^\d{1,4}$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= 1 && n <= size.max))
    throw invalidParam('limit', `\`limit\` is a whole number from 1 to ${size.max} (default ${size.default}).`);
  return n;
}

/** The latest instant a time parameter may name: year 9999, as Postgres and `Date` both hold it. */
const MAX_UNIX_SECONDS = 253_402_300_799;

/** A time as OpenAI's Usage API takes one: whole Unix seconds (`start_time`, `end_time`). */
export function unixTimeParam(query: Readonly<Record<string, unknown>>, param: string): Date | undefined {
  const raw = singleParam(query, param);
  if (raw === undefined) return undefined;
  const n = /^\d{1,12}$/.test(raw) ? Number(raw) : NaN;
  if (!(n <= MAX_UNIX_SECONDS)) throw invalidParam(param, `\`${param}\` is a time in whole Unix seconds (e.g. 1767225600).`);
  return new Date(n * 1000);
}

/** A window `[start_time, end_time)`; `end_time` after `start_time` when both are sent. */
export function timeWindow(query: Readonly<Record<string, unknown>>): { start?: Date; end?: Date } {
  const start = unixTimeParam(query, 'start_time');
  const end = unixTimeParam(query, 'end_time');
  if (start && end && end <= start) throw invalidParam('end_time', '`end_time` must be after `start_time`.');
  return { start, end };
}

/** Refuses any parameter not named: a misspelt filter would otherwise list everything. */
export function onlyParams(query: Readonly<Record<string, unknown>>, known: readonly string[], pattern?: RegExp): void {
  for (const param of Object.keys(query)) {
    if (!known.includes(param) && !pattern?.test(param)) throw invalidParam(param, `\`${param}\` is not a parameter of this list.`);
  }
}
