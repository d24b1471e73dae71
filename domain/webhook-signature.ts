import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Signed completion callbacks (issue 28 item 6), on Stripe's webhook scheme: the signature is the hex HMAC-SHA256
 * of `<unix seconds>.<body>` under the organisation's signing secret, sent as `Quorum-Signature: t=<seconds>,v1=<hex>`.
 * The timestamp is signed with the body, so a receiver that refuses old timestamps refuses replays.
 */
export const SIGNATURE_HEADER = 'Quorum-Signature';
export const EVENT_ID_HEADER = 'Quorum-Event-Id';
/**
 * A signed delivery's first retry waits 10 s, doubling to an hour between tries (workflows/run-callback.ts): a
 * receiver back within minutes hears at once. Run callbacks and account events alike.
 */
export const DEFAULT_CALLBACK_RETRY_MS = 10_000;
/** What a receiver should accept between the signed time and its clock (Stripe's default tolerance). */
export const SIGNATURE_TOLERANCE_S = 300;

/** A new signing secret: 32 random bytes, prefixed so it is recognisable in a config file (as Stripe's `whsec_`). */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

/** The hex HMAC of one delivery; the key is the secret's text as UTF-8, prefix included. */
export function signPayload(secret: string, timestampS: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestampS}.${body}`, 'utf8').digest('hex');
}

export function signatureHeader(secret: string, timestampS: number, body: string): string {
  return `t=${timestampS},v1=${signPayload(secret, timestampS, body)}`;
}

/**
 * Whether a header signs `body` under `secret` within `toleranceS` of `nowS`: what a receiver runs (the docs give the
 * same check in ten lines). Any `v1` may match, as Stripe allows several during a rotation.
 */
export function verifySignature(
  header: string,
  body: string,
  secret: string,
  nowS: number,
  toleranceS: number = SIGNATURE_TOLERANCE_S,
): boolean {
  const parts = header.split(',').map((p) => p.trim().split('='));
  const t = Number(parts.find(([k]) => k === 't')?.[1]);
  if (!Number.isInteger(t) || Math.abs(nowS - t) > toleranceS) return false;
  const expected = Buffer.from(signPayload(secret, t, body), 'hex');
  return parts
    .filter(([k, v]) => k === 'v1' && v !== undefined && /^[0-9a-f]{64}$/.test(v))
    .some(([, v]) => timingSafeEqual(Buffer.from(v, 'hex'), expected));
}
