import { microsToUsd } from '../../domain/money';

/** JSON as the serialisers emit it; an `undefined` member is left out of the body. */
export type Json = string | number | boolean | null | Json[] | JsonObject;
export interface JsonObject {
  [key: string]: Json | undefined;
}

/** Micro-dollars → the USD number of a `*_usd` field: the one place money leaves integers. */
export function usd(micros: number): number {
  return microsToUsd(BigInt(micros));
}

/** A ceiling's `*_usd` field: null when the call has none (a call on a plan), never a stand-in number. */
export function ceilingUsd(micros: number | null): number | null {
  return micros === null ? null : usd(micros);
}
