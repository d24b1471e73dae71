import type { Outcome } from './outcome';

/**
 * The engines' own critical path through a deliberation: the slowest seat of each round, then the judge and the
 * synthesis. A seat's span runs from its first attempt's start to its final attempt's end, so a cut-off seat's retry
 * counts as engine time. End to end minus this is Quorum's orchestration overhead (DESIGN §13).
 */
export function enginePathMs(o: Pick<Outcome, 'seatPasses' | 'staff'>): number {
  const rounds = new Map<number, number>();
  for (const r of o.seatPasses) rounds.set(r.round, Math.max(rounds.get(r.round) ?? 0, Date.parse(r.endedAt) - Date.parse(r.startedAt)));
  return [...rounds.values()].reduce((a, b) => a + b, 0) + (o.staff.judge?.latencyMs ?? 0) + (o.staff.synthesis?.latencyMs ?? 0);
}
