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
