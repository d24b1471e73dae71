import { seededRandom } from './prng';
import { attemptVerdict, clusteredWinRate, verdictFor, type ClusteredScore, type WinRateSummary } from './statistics';

/**
 * Monte-Carlo check of the certification statistics: runs drawn at a known true win rate, with judgments that
 * agree within a question as real ones do, counted for how often they certify and how often their interval covers
 * the truth. Pure and seeded, so the test and the bench give reproducible figures.
 */
export interface SimulationInput {
  trueRate: number;
  runs: number;
  questions?: number;
  judges?: number;
  repeats?: number;
  /** Share of judgments that are ties, where the question's win probability allows it. */
  tieShare?: number;
  /**
   * Beta concentration of the questions' own win probabilities around the true rate: smaller means questions
   * differ more. At 2 the intra-class correlation of judgments is about 0.3 (Var p_q = μ(1−μ)/(c+1) = 0.083 at
   * μ = 0.5, against ≈ 0.23 total), as judges who mostly agree on a question give.
   */
  concentration?: number;
  seed: number;
}

export interface SimulationResult {
  runs: number;
  certifiedShare: number;
  provisionalShare: number;
  coverage: number;
  meanWidth: number;
}

/** Marsaglia–Tsang gamma sampler (shape ≥ 1; boosted for shape < 1), from uniforms and Box–Muller normals. */
function gamma(shape: number, random: () => number): number {
  if (shape < 1) return gamma(shape + 1, random) * Math.pow(random(), 1 / shape);
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    const u1 = random() || Number.MIN_VALUE;
    const x = Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * random());
    const v = (1 + c * x) ** 3;
    if (v <= 0) continue;
    const u = random();
    if (Math.log(u || Number.MIN_VALUE) < 0.5 * x * x + d - d * v + d * Math.log(v)) return d * v;
  }
}

function beta(a: number, b: number, random: () => number): number {
  const x = gamma(a, random);
  return x / (x + gamma(b, random));
}

/** One simulated run's judgments (drawn into `scores`, reused across runs) and its clustered win rate. */
function drawRun(input: SimulationInput, random: () => number, scores: ClusteredScore[]): WinRateSummary {
  const questions = input.questions ?? 150;
  const perQuestion = (input.judges ?? 3) * (input.repeats ?? 2);
  const tieShare = input.tieShare ?? 0.1;
  const c = input.concentration ?? 2;
  scores.length = questions * perQuestion;
  let k = 0;
  for (let q = 0; q < questions; q++) {
    const p = beta(input.trueRate * c, (1 - input.trueRate) * c, random);
    // A tie scores half, so the win share is lowered by half the tie share to keep the question's mean at p.
    const tie = Math.min(tieShare, 2 * p, 2 * (1 - p));
    const win = p - tie / 2;
    const cluster = String(q);
    for (let j = 0; j < perQuestion; j++) {
      const u = random();
      scores[k++] = { cluster, score: u < win ? 1 : u < win + tie ? 0.5 : 0 };
    }
  }
  return clusteredWinRate(scores);
}

export function simulateCertifications(input: SimulationInput): SimulationResult {
  const { trueRate, runs } = input;
  const random = seededRandom(input.seed);
  let certified = 0;
  let provisional = 0;
  let covered = 0;
  let width = 0;
  const scores: ClusteredScore[] = [];
  for (let r = 0; r < runs; r++) {
    const summary = drawRun(input, random, scores);
    const verdict = verdictFor(summary.interval.low);
    if (verdict === 'certified') certified++;
    if (verdict === 'provisional') provisional++;
    if (summary.interval.low <= trueRate && trueRate <= summary.interval.high) covered++;
    width += summary.interval.high - summary.interval.low;
  }
  return {
    runs,
    certifiedShare: certified / runs,
    provisionalShare: provisional / runs,
    coverage: covered / runs,
    meanWidth: width / runs,
  };
}

/**
 * An owner who certifies one configuration again and again (issue 38 item 3): `series` owners each make up to
 * max(attempts) attempts, attempt k judged by `attemptVerdict` at α_k. Each owner's first certified attempt (null:
 * none), and for each n in `attempts` how many owners got a `certified` within their first n (an owner stops at the
 * first; later attempts cannot undo it).
 */
export function simulateAttemptSeries(input: Omit<SimulationInput, 'runs'> & { series: number; attempts: readonly number[] }): {
  series: number;
  firstCertified: (number | null)[];
  certifiedWithin: Map<number, number>;
} {
  const random = seededRandom(input.seed);
  const most = Math.max(...input.attempts);
  const firstCertified: (number | null)[] = [];
  const scores: ClusteredScore[] = [];
  for (let s = 0; s < input.series; s++) {
    let first: number | null = null;
    for (let k = 1; k <= most && first === null; k++)
      if (attemptVerdict(drawRun({ ...input, runs: 1 }, random, scores), k).verdict === 'certified') first = k;
    firstCertified.push(first);
  }
  return {
    series: input.series,
    firstCertified,
    certifiedWithin: new Map(input.attempts.map((n) => [n, firstCertified.filter((k) => k !== null && k <= n).length])),
  };
}
