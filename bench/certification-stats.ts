import { simulateCertifications } from '../domain/certification-simulation';

/**
 * The certification statistics by simulation (DESIGN §10): 10,000 simulated 150-question runs (3 judges × 2 repeats,
 * questions that differ, ties 10%) at each true win rate; how often each certifies, and how often its 95% interval
 * covers the truth. Prints figures; asserts nothing (the test suite checks the bounds on 2,000 runs).
 */
const RUNS = Number(process.env.BENCH_SIM_RUNS ?? 10_000);
const RATES = [0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7];

const started = performance.now();
console.log(`${RUNS} simulated certifications per row (150 questions, 3 judges, 2 repeats, Beta(2) question spread, 10% ties)`);
console.log('true rate | certified | provisional | coverage | mean interval width');
for (const trueRate of RATES) {
  const r = simulateCertifications({ trueRate, runs: RUNS, seed: Math.round(trueRate * 1000) });
  const pct = (x: number): string => `${(x * 100).toFixed(2)}%`.padStart(8);
  console.log(
    `     ${trueRate.toFixed(2)} | ${pct(r.certifiedShare)}  | ${pct(r.provisionalShare)}    | ${pct(r.coverage)} | ${r.meanWidth.toFixed(4)}`,
  );
}
console.log(`(${((performance.now() - started) / 1000).toFixed(1)} s)`);
