import type { Lane } from './classifier';
import type { Form } from './form';
import type { Depth, ModeConfig } from './modes';
import type { CallSource } from './outcome';
import { engineCostMicros } from './pricing';

/** Platform fee on real engine cost, in parts per million: 5% on the service's keys, 0.5% on the caller's own. */
export const PLATFORM_FEE_PPM: Readonly<Record<CallSource, number>> = { service: 50_000, own_key: 5_000 };

/** Form B's floor for a call's ceiling: the higher of this and the mode's own price. */
export const FORM_B_MIN_CEILING_MICROS = 2_000_000;

/**
 * The platform fee on `costMicros` of one source's real cost, to the nearest micro-dollar. A call's fee is this once
 * per source on that source's summed cost (spec 01 item 11), so `platform_fee_usd` is the published rate of what it is
 * charged on, never a sum of per-engine roundings.
 */
export function platformFeeMicros(costMicros: number, source: CallSource): number {
  return Math.round((costMicros * PLATFORM_FEE_PPM[source]) / 1_000_000);
}

/** The mode's fee: Form A a surcharge by depth (or the express one); Form B a per-Mtok rate with output at 4× input. */
export function modeFeeMicros(
  form: Form,
  fees: ModeConfig['fees'],
  use: { depth: Depth; lane: Lane; tokensIn: number; tokensOut: number },
): number {
  if (form === 'A') return use.lane === 'express' ? fees.expressSurchargeMicros : fees.surchargeByDepthMicros[use.depth];
  return engineCostMicros(use.tokensIn, use.tokensOut, {
    inputUsdPerMtok: fees.perMtokInputUsd,
    outputUsdPerMtok: fees.perMtokInputUsd * 4,
  });
}

/**
 * The call's ceiling. Form B: the key's own ceiling, else the higher of $2 and the mode's; `svc.max_cost_usd`
 * may only lower it. Form A: the mode's ceiling (or the key's).
 */
export function callCeilingMicros(
  form: Form,
  config: ModeConfig,
  keyCeilingMicros: number | undefined,
  requestedMicros: number | undefined,
): number {
  const base = keyCeilingMicros ?? (form === 'B' ? Math.max(FORM_B_MIN_CEILING_MICROS, config.ceilingMicros) : config.ceilingMicros);
  return requestedMicros !== undefined ? Math.min(base, requestedMicros) : base;
}

/** A call's ceiling in micro-dollars; null = none (a connected app's call on a plan pays real cost, spec 01 rule 11). */
export type Ceiling = number | null;

export interface Bill {
  capCreditMicros: number;
  billedMicros: number;
  capped: boolean;
}

/** Form B runs in full and credits back what passed the ceiling; Form A's charge is held at the ceiling. */
export function bill(
  form: Form,
  parts: { gatewayMicros: number; platformFeeMicros: number; modeFeeMicros: number; ceilingMicros: Ceiling },
): Bill {
  const gross = parts.gatewayMicros + parts.platformFeeMicros + parts.modeFeeMicros;
  if (parts.ceilingMicros === null || gross <= parts.ceilingMicros) return { capCreditMicros: 0, billedMicros: gross, capped: false };
  return form === 'B'
    ? { capCreditMicros: gross - parts.ceilingMicros, billedMicros: parts.ceilingMicros, capped: true }
    : { capCreditMicros: 0, billedMicros: parts.ceilingMicros, capped: true };
}
