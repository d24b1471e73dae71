/**
 * Money is integer micro-dollars (1 USD = 1,000,000 micros) everywhere below the API edge (DESIGN §7).
 * Conversions go through decimal strings so no binary-float rounding ever reaches a balance.
 */
export const MICROS_PER_USD = 1_000_000n;

const USD_TEXT = /^(-)?(\d+)(?:\.(\d{1,6}))?$/;
/** Larger than any real balance, small enough that every micro value stays an exact double at the edge. */
const MAX_ABS_USD = 1_000_000_000;

/** Exact USD text ("5", "12.50", "-0.000001") or a JS number with at most six decimals → micros; anything else throws. */
export function usdToMicros(value: string | number): bigint {
  const text = typeof value === 'number' ? numberToUsdText(value) : value.trim();
  const m = USD_TEXT.exec(text);
  if (!m) throw new RangeError(`not a USD amount with at most 6 decimals: ${JSON.stringify(value)}`);
  const [, minus, whole, frac = ''] = m;
  const micros = BigInt(whole) * MICROS_PER_USD + BigInt(frac.padEnd(6, '0'));
  return minus ? -micros : micros;
}

/**
 * A positive USD number from a caller → micros: exact to the micro-dollar (2.01 → 2,010,000, where `2.01 * 1e6` floors
 * to 2,009,999), and a value finer than a micro-dollar rounded down, never below one micro.
 */
export function usdToMicrosAtMost(value: number): bigint {
  const text = value.toFixed(6);
  const nearest = usdToMicros(text);
  const micros = Number(text) > value ? nearest - 1n : nearest;
  return micros < 1n ? 1n : micros;
}

function numberToUsdText(value: number): string {
  if (!Number.isFinite(value) || Math.abs(value) > MAX_ABS_USD) throw new RangeError(`USD amount out of range: ${value}`);
  const fixed = value.toFixed(6);
  // A number finer than a micro-dollar would be silently rounded; refuse it instead.
  if (Number(fixed) !== value) throw new RangeError(`USD amount has more than 6 decimals: ${value}`);
  return fixed;
}

/** Exact decimal text of a micro amount, trailing zeros trimmed to at least cents: 5000000n → "5.00", 1n → "0.000001". */
export function microsToDecimal(micros: bigint): string {
  const sign = micros < 0n ? '-' : '';
  const abs = micros < 0n ? -micros : micros;
  const whole = abs / MICROS_PER_USD;
  const frac = (abs % MICROS_PER_USD)
    .toString()
    .padStart(6, '0')
    .replace(/0{1,4}$/, '');
  return `${sign}${whole}.${frac.padEnd(2, '0')}`;
}

/** Micros → a JSON number for `*_usd` fields: the double nearest the exact decimal, which prints back as that decimal. */
export function microsToUsd(micros: bigint): number {
  return Number(microsToDecimal(micros));
}
