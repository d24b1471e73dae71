import { createHash, randomBytes } from 'node:crypto';
import { QuorumError } from './errors';
import { microsToDecimal } from './money';

/**
 * DESIGN §8: `qrm_live_` / `qrm_test_` + 32 random base62 characters; only the SHA-256 hash is stored. An admin key
 * (`qrm_admin_`, issue 41) manages the organisation's keys and reads its activity; it calls no mode (api/http/access.ts).
 */
export const KEY_PREFIX = 'qrm';
export const KEY_KINDS = ['live', 'test', 'admin'] as const;
export type KeyKind = (typeof KEY_KINDS)[number];
/** The kinds that call modes; the API's key routes issue only these (an admin key is made by the owner in the console). */
export const CALLING_KEY_KINDS = ['live', 'test'] as const;
export type CallingKeyKind = (typeof CALLING_KEY_KINDS)[number];

export const SCOPES = ['completions', 'estimate', 'models', 'receipts', 'tests', 'certify', 'modes:write'] as const;
export type Scope = (typeof SCOPES)[number];

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const SECRET_LENGTH = 32;
const KEY_SHAPE = /^qrm_(live|test|admin)_[A-Za-z0-9]{32}$/;

/** Uniform base62: bytes ≥ 248 (= 4·62) are rejected rather than folded, so no character is favoured. */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

export function generateApiKey(kind: KeyKind): string {
  return `${KEY_PREFIX}_${kind}_${randomBase62(SECRET_LENGTH)}`;
}

/** A bearer meant as one of our keys (it carries our prefix), well-formed or not. */
export function isApiKeyAttempt(raw: string): boolean {
  return raw.startsWith(`${KEY_PREFIX}_`);
}

/**
 * Access tokens for connected apps carry this many bits of randomness, written as 64 URL-safe base64 characters: a
 * length of their own (the library's default, 256 bits, is 43), so a bearer of any other shape, such as a provider's
 * `sk-…` key pasted by mistake, is answered as the key it was meant to be (`invalid_api_key`), not as a token.
 */
export const ACCESS_TOKEN_BITS = 384;
const ACCESS_TOKEN_SHAPE = new RegExp(`^[A-Za-z0-9_-]{${ACCESS_TOKEN_BITS / 6}}$`);

export function isAccessTokenShaped(raw: string): boolean {
  return ACCESS_TOKEN_SHAPE.test(raw);
}

/** The key's kind (live or test) when it has the exact shape of a Quorum key, else undefined (→ `invalid_api_key`). */
export function parseApiKeyKind(raw: string): KeyKind | undefined {
  const m = KEY_SHAPE.exec(raw);
  return m ? (m[1] as KeyKind) : undefined;
}

/** Hex SHA-256: the key is 190 bits of randomness, so an unsalted fast hash is enough and allows an indexed lookup. */
export function hashApiKey(raw: string): string {
  return createHash('sha256').update(raw, 'utf8').digest('hex');
}

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

/** A key limited to named modes may use only those; `null` means every mode the organisation is entitled to. */
export function keyAllowsMode(allowedModes: readonly string[] | null, modeId: string): boolean {
  return allowedModes === null || allowedModes.includes(modeId);
}

/**
 * A key's own requests per minute must be below its organisation's (issue 41), which is the service's per-key default:
 * a key without its own limit has the organisation's.
 */
export const ORG_REQUESTS_PER_MINUTE = 60;

/** The first instant of this calendar month, UTC: a key's budget is per month. */
export function monthStartUtc(now: Date = new Date()): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
}

/** A key's month so far against its budget: this month's net charges of its calls, and what its calls in flight hold. */
export interface KeyBudgetFigures {
  budgetMicros: bigint;
  spentMicros: bigint;
  heldMicros: bigint;
}

/** Whether a call holding `holdMicros` fits the key's budget: spent + held + this hold, at most the budget. */
export function fitsKeyBudget(f: KeyBudgetFigures, holdMicros: bigint): boolean {
  return f.spentMicros + f.heldMicros + holdMicros <= f.budgetMicros;
}

/** 402 `key_budget_exceeded`: the call's hold would take the key past its monthly budget; names every figure. */
export function keyBudgetExceeded(f: KeyBudgetFigures, holdMicros: bigint): QuorumError {
  const usd = microsToDecimal;
  return new QuorumError(
    'key_budget_exceeded',
    `This call may cost up to ${usd(holdMicros)} USD (its hold), and this key has spent ${usd(f.spentMicros)} USD and holds ${usd(f.heldMicros)} USD this month (UTC) of its monthly budget of ${usd(f.budgetMicros)} USD. Nothing ran and nothing was charged; raise the budget or wait for next month.`,
  );
}
