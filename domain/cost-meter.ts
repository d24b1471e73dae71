import type { Lane } from './classifier';
import { modeFeeMicros, platformFeeMicros, type Ceiling } from './fees';
import type { Form } from './form';
import type { Depth, ModeConfig } from './modes';
import type { CallSource } from './outcome';
import { engineCostMicros, type TokenPrices } from './pricing';

/** A provider call as it is metered: what it cost and what it used. */
export interface MeteredCall {
  costMicros: number;
  source: CallSource;
  tokensIn: number;
  tokensOut: number;
  reasoningTokens: number | null;
}

/** A call about to be made, priced at its most: the input it will read and all the output it may write. */
export interface ProjectedCall {
  engine: TokenPrices & { ownKey: boolean };
  tokensIn: number;
  maxOut: number;
}

export interface MeterTerms {
  form: Form;
  fees: ModeConfig['fees'];
  depth: Depth;
  lane: Lane;
  ceilingMicros: Ceiling;
  /** A connected app's call on a plan: real engine cost only, no platform fee and no mode fee (spec 01 rule 11). */
  realCostOnly?: boolean;
}

/**
 * Every provider call's cost as it happens, and the ceiling check made before each step: Form A stops before a step
 * that would pass the ceiling (and the call ends `cost_cap`); Form B always runs in full and credits back later.
 *
 * A seat call on the organisation's own key runs on and is billed by its provider (spec 01 items 11 and 13): it adds
 * to the real cost and carries the 0.5% platform fee, but is not in `gatewayMicros`, what the service bills for
 * engines. Staff calls always run on the service's keys.
 */
export class CostMeter {
  /** The engines the service pays for, billed at actual: every call on the service's keys. */
  gatewayMicros = 0;
  /** Every call's cost at its source, own keys included. */
  realCostMicros = 0;
  tokensIn = 0;
  tokensOut = 0;
  reasoningTokens: number | null = null;
  /** A step was skipped because it could have passed the ceiling. */
  capped = false;
  private readonly costBySource: Record<CallSource, number> = { service: 0, own_key: 0 };

  constructor(private readonly terms: MeterTerms) {}

  charge(call: MeteredCall): void {
    this.realCostMicros += call.costMicros;
    this.costBySource[call.source] += call.costMicros;
    if (call.source === 'service') this.gatewayMicros += call.costMicros;
    this.tokensIn += call.tokensIn;
    this.tokensOut += call.tokensOut;
    if (call.reasoningTokens !== null) this.reasoningTokens = (this.reasoningTokens ?? 0) + call.reasoningTokens;
  }

  /** The platform fee: each source's rate on its summed real cost, rounded once per source; none on a plan. */
  get platformFeeMicros(): number {
    if (this.terms.realCostOnly) return 0;
    return platformFeeMicros(this.costBySource.service, 'service') + platformFeeMicros(this.costBySource.own_key, 'own_key');
  }

  /** The mode's fee for what has run so far (Form A: the depth's surcharge; Form B: per token processed). */
  modeFeeMicros(): number {
    const { form, fees, depth, lane, realCostOnly } = this.terms;
    if (realCostOnly) return 0;
    return modeFeeMicros(form, fees, { depth, lane, tokensIn: this.tokensIn, tokensOut: this.tokensOut });
  }

  /** Whether the next step fits under the ceiling even if every call writes its whole output allowance. */
  affords(step: readonly ProjectedCall[]): boolean {
    const ceiling = this.terms.ceilingMicros;
    if (this.terms.form === 'B' || ceiling === null) return true;
    const stepMicros = step.reduce((sum, c) => {
      const cost = engineCostMicros(c.tokensIn, c.maxOut, c.engine);
      const source = c.engine.ownKey ? 'own_key' : 'service';
      // Bills as it will be billed: an own-key call costs the caller only its fee here. (Rounded per call, the step's
      // fees may pass the call's single rounding by a micro-dollar each: on the side of stopping.)
      return sum + platformFeeMicros(cost, source) + (source === 'service' ? cost : 0);
    }, 0);
    if (this.gatewayMicros + this.platformFeeMicros + this.modeFeeMicros() + stepMicros <= ceiling) return true;
    this.capped = true;
    return false;
  }
}
