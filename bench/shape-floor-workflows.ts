// Workflows of bench/shape-floor.ts: Temporal's smallest durable call, and the same call in the shape of Quorum's
// express deliberation (its steps and history events) with none of Quorum's code in them.
import { patched, proxyLocalActivities, upsertMemo, upsertSearchAttributes } from '@temporalio/workflow';
import type { ShapeActivities } from './shape-floor';
import { QuorumLane, QuorumStatus } from '../workflows/search-attributes';

const steps = proxyLocalActivities<ShapeActivities>({ scheduleToCloseTimeout: '10 seconds' });

/** The floor's workflow: one local activity, the engine call. */
export async function oneStep(input: { prompt: string }): Promise<string> {
  return steps.callEngine(input.prompt);
}

/**
 * An express deliberation's history, step for step (bench/sql-trace.ts prints it): a hold that returns the seating,
 * the engine call, a settle, each a local activity; two patch markers; the lane and status upserts and the memo.
 */
export async function expressShape(input: { prompt: string; mode: unknown }): Promise<string> {
  const seating = await steps.hold(input.mode);
  upsertSearchAttributes([{ key: QuorumLane, value: 'express' }]);
  patched('bench-shape-first');
  upsertSearchAttributes([{ key: QuorumStatus, value: 'running' }]);
  const answer = await steps.callEngine(input.prompt);
  patched('bench-shape-second');
  await steps.settle({ seating, answer });
  upsertSearchAttributes([{ key: QuorumStatus, value: 'succeeded' }]);
  upsertMemo({ summary: 'express · 1 round(s) · 1/1 seats', billedMicros: 1_000 });
  return answer;
}

/**
 * A panel's steps (bench/sql-trace.ts prints its history): the hold, three seats at once, the judge, a critique round of
 * three seats at once and its judge, the synthesis, the settle, each a local activity (nine engine calls), with the
 * express shape's markers, upserts and memo.
 */
export async function panelShape(input: { prompt: string; mode: unknown }): Promise<string> {
  const seating = await steps.hold(input.mode);
  upsertSearchAttributes([{ key: QuorumLane, value: 'panel' }]);
  patched('bench-shape-first');
  upsertSearchAttributes([{ key: QuorumStatus, value: 'running' }]);
  const seats = (): Promise<string[]> => Promise.all([1, 2, 3].map((seat) => steps.callEngine(`${input.prompt} seat ${seat}`)));
  const first = await seats();
  await steps.callEngine(`judge: ${first.join(' | ')}`);
  const critiques = await seats();
  await steps.callEngine(`judge: ${critiques.join(' | ')}`);
  patched('bench-shape-second');
  const answer = await steps.callEngine(`synthesis: ${critiques.join(' | ')}`);
  await steps.settle({ seating, answer });
  upsertSearchAttributes([{ key: QuorumStatus, value: 'succeeded' }]);
  upsertMemo({ summary: 'panel · 2 round(s) · 3/3 seats', billedMicros: 9_000 });
  return answer;
}
