import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Where the benches write their figures as JSON, beside the table they print (issue 16). */
export const resultsDir = path.join(__dirname, 'results');

export function round(n: number, digits = 1): number {
  return Number(n.toFixed(digits));
}

/** The machine a figure was measured on, and how busy it was: a figure means little without them. */
export function machine(loadAtStart: readonly number[]): Record<string, unknown> {
  return {
    nproc: os.cpus().length,
    cpu: os.cpus()[0]?.model,
    memoryMb: round(os.totalmem() / 2 ** 20, 0),
    node: process.version,
    loadAverageAtStart: loadAtStart.map((l) => round(l, 2)),
    loadAverageAtEnd: os.loadavg().map((l) => round(l, 2)),
  };
}

/** Writes `<name>-<date>.json` and, when given, a stable copy under `latest` too; returns the dated file's path. */
export function writeResults(name: string, report: { date: string } & Record<string, unknown>, latest?: string): string {
  fs.mkdirSync(resultsDir, { recursive: true });
  const text = JSON.stringify(report, null, 2) + '\n';
  const file = path.join(resultsDir, `${name}-${report.date.slice(0, 10)}.json`);
  fs.writeFileSync(file, text);
  if (latest) fs.writeFileSync(path.join(resultsDir, latest), text);
  return file;
}
