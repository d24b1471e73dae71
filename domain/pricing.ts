/**
 * Pricing arithmetic. Money is integer micro-dollars; a price in USD per million tokens is exactly
 * micro-dollars per token.
 */
export interface TokenPrices {
  inputUsdPerMtok: number;
  outputUsdPerMtok: number;
}

/** Prices are scaled to integers first so that e.g. 10 tokens at $0.7/Mtok is exactly 7, not 7.000000000000001 → 8. */
const PRICE_SCALE = 1_000_000;

/** Engine cost of one call in micro-dollars, rounded up to the next whole micro-dollar. */
export function engineCostMicros(tokensIn: number, tokensOut: number, prices: TokenPrices): number {
  const scaledIn = Math.round(prices.inputUsdPerMtok * PRICE_SCALE);
  const scaledOut = Math.round(prices.outputUsdPerMtok * PRICE_SCALE);
  const scaled = tokensIn * scaledIn + tokensOut * scaledOut;
  return Math.ceil(scaled / PRICE_SCALE);
}
