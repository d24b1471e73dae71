import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { repoRoot } from '../infra/paths';
import { round } from './results';

/**
 * Temporal's floor (issue 31, DESIGN §13): the shared tool `../shared/tools/temporal-floor/floor.mjs`, run from the
 * project root (it loads @temporalio/* from our node_modules), measures the smallest durable call on the Temporal CLI's
 * dev server: one workflow whose only step is a local activity calling an HTTP engine that answers at once, started
 * eagerly or not, one at a time and 16 concurrent, and once with three ordinary activities instead. It prints one
 * JSON line per phase, read here.
 */
export const FLOOR_SCRIPT = path.resolve(repoRoot, '..', 'shared', 'tools', 'temporal-floor', 'floor.mjs');
const FLOOR_TIMEOUT_MS = 20 * 60_000;

export const FloorPhase = z.object({
  phase: z.string().min(1),
  concurrency: z.number().int().positive(),
  n: z.number().int().positive(),
  /** Calls started eagerly of those made, `12/300`. */
  eager: z.string().regex(/^\d+\/\d+$/),
  p50_ms: z.number().nonnegative(),
  p99_ms: z.number().nonnegative(),
  per_s: z.number().nonnegative(),
  /** temporal: the dev server; sdk_process: the floor's own process (client, worker, activity); total: their sum. */
  cpu_ms_per_call: z.object({
    temporal: z.number().nonnegative(),
    sdk_process: z.number().nonnegative(),
    engine: z.number().nonnegative(),
    total: z.number().nonnegative(),
  }),
});
export type FloorPhase = z.infer<typeof FloorPhase>;

export interface FloorResult {
  script: string;
  command: string;
  /** Calls per phase (FLOOR_N); the 16-concurrent phases make twice as many. */
  n: number;
  seconds: number;
  loadAverage: { start: number[]; end: number[] };
  phases: FloorPhase[];
  /** Why the floor has no figures, or only some: the tool missing, or its own words when it failed. */
  error?: string;
}

/**
 * Runs the floor with SQLite in WAL mode (FLOOR_PRAGMAS=1) on `temporalCli`, the same binary the dev target runs.
 * Never throws: a missing tool or a failed run is said in `error`, beside whatever phases it printed.
 */
export async function runFloor(n: number, temporalCli: string): Promise<FloorResult> {
  const script = path.relative(repoRoot, FLOOR_SCRIPT);
  const command = `FLOOR_PRAGMAS=1 FLOOR_N=${n} node ${script}`;
  const loadAtStart = os.loadavg();
  const started = performance.now();
  const done = (phases: FloorPhase[], error?: string): FloorResult => ({
    script,
    command,
    n,
    seconds: round((performance.now() - started) / 1000),
    loadAverage: { start: loadAtStart.map((l) => round(l, 2)), end: os.loadavg().map((l) => round(l, 2)) },
    phases,
    ...(error === undefined ? {} : { error }),
  });
  if (!fs.existsSync(FLOOR_SCRIPT)) return done([], `${FLOOR_SCRIPT} is missing: no floor figures`);

  // Its own process group, so a timeout stops the dev server and engine it starts too.
  const child = spawn(process.execPath, [FLOOR_SCRIPT], {
    cwd: repoRoot,
    env: { ...process.env, FLOOR_PRAGMAS: '1', FLOOR_N: String(n), TEMPORAL_CLI_PATH: temporalCli },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4_000)));
  const timer = setTimeout(() => child.pid !== undefined && process.kill(-child.pid, 'SIGKILL'), FLOOR_TIMEOUT_MS);
  const exit = await new Promise<{ code: number | null; error?: Error }>((resolve) => {
    child.once('error', (error) => resolve({ code: null, error }));
    child.once('close', (code) => resolve({ code }));
  });
  clearTimeout(timer);

  const phases: FloorPhase[] = [];
  const problems: string[] = [];
  for (const line of stdout.split('\n').filter((l) => l.trim() !== '')) {
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      problems.push(`not JSON: ${line.slice(0, 200)}`);
      continue;
    }
    const parsed = FloorPhase.safeParse(json);
    if (parsed.success) phases.push(parsed.data);
    else
      problems.push(
        `not a floor phase (${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}): ${line.slice(0, 200)}`,
      );
  }
  if (exit.error) problems.push(exit.error.message);
  else if (exit.code !== 0) problems.push(`exited with code ${String(exit.code)}: ${stderr.trim().split('\n').slice(-8).join('\n')}`);
  return done(phases, problems.length > 0 ? problems.join('\n') : undefined);
}
