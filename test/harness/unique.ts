import { randomInt } from 'node:crypto';

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/**
 * A Form B ticker no other test will draw: tickers are unique across the shared test database,
 * so the company part carries 7 random characters (36^7 values) rather than a slice of an id.
 */
export function uniqueTicker(modeCode: string): string {
  let company = 'T';
  for (let i = 0; i < 7; i++) company += ALNUM[randomInt(ALNUM.length)];
  return `${company}:${modeCode}`;
}
