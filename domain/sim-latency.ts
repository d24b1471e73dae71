/**
 * Latency models of the `sim` engines. `spec` is a log-normal fitted to the spec's published
 * deliberation timings (p50 28.5 s, p90 88.2 s, p99 229.3 s): mu = ln(28.5); sigma by least squares
 * on the log-quantiles at z(0.90) = 1.2816 and z(0.99) = 2.3263, which gives sigma = 0.8929 and
 * model quantiles p90 89.5 s, p99 227.5 s (within 2% of the spec).
 */
export type SimLatency = { kind: 'zero' } | { kind: 'fixed'; ms: number } | { kind: 'spec'; speedup: number };

export const SPEC_LATENCY_MU = Math.log(28_500);
export const SPEC_LATENCY_SIGMA = 0.8929;

/** Parses `zero`, `fixed:<ms>`, `spec` or `spec:<speedup>` (the sampled latency is divided by the speed-up). */
export function parseSimLatency(text: string): SimLatency {
  const [kind, arg, extra] = text.trim().split(':');
  const num = arg === undefined ? undefined : Number(arg);
  if (extra === undefined) {
    if (kind === 'zero' && arg === undefined) return { kind: 'zero' };
    if (kind === 'fixed' && num !== undefined && Number.isFinite(num) && num >= 0) return { kind: 'fixed', ms: num };
    if (kind === 'spec' && arg === undefined) return { kind: 'spec', speedup: 1 };
    if (kind === 'spec' && num !== undefined && Number.isFinite(num) && num > 0) return { kind: 'spec', speedup: num };
  }
  throw new Error(`invalid sim latency "${text}": expected zero, fixed:<ms>, spec or spec:<speedup>`);
}

/**
 * One latency draw in milliseconds. `u1`, `u2` are independent uniforms in (0, 1), supplied by the
 * caller so the draw can be deterministic (Box–Muller turns them into a standard normal).
 */
export function simLatencyMs(model: SimLatency, u1: number, u2: number): number {
  switch (model.kind) {
    case 'zero':
      return 0;
    case 'fixed':
      return model.ms;
    case 'spec': {
      const z = Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
      return Math.exp(SPEC_LATENCY_MU + SPEC_LATENCY_SIGMA * z) / model.speedup;
    }
  }
}
