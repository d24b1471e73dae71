import type { Lane } from './classifier';
import { tiersOf, type ModeConfig, type Tier } from './modes';
import type { SeatRole } from './outcome';
import { isSimEngine, laneFor, seatingFor, type SeatingContext, type StaffAssignment } from './seat-assignment';

/**
 * Who would answer a mode's calls now, read off the call's own seating (`seatingFor`): the engine a seat, judge or
 * synthesis would run on is the first of its chain, which is the designed engine when it can run here, else its
 * first real backup that can, and a `sim` stand-in only when nothing of the design can. A listing built from this
 * cannot say other than the call does.
 */

/** One place of the design and the engine that would answer there now; null when nothing can run here (production). */
export interface Seated {
  designed: string;
  answers: string | null;
}

export interface TierSeating {
  tier: Tier;
  lane: Lane;
  seats: (Seated & { role: SeatRole })[];
  /** Null on the express lane: one seat answers alone, no judge or synthesis is called. */
  judge: Seated | null;
  synthesis: Seated | null;
  /** Families of every engine in these chains: the first answers, a later one only when the one before fails. */
  families: string[];
}

function seated(step: Pick<StaffAssignment, 'designed' | 'chain'>): Seated {
  return { designed: step.designed, answers: step.chain[0]?.engineId ?? null };
}

/**
 * Each tier the mode has a row for, planned as a call at that tier would be: the experience tier (and every tier of
 * an express-only mode) on the express lane, the others as a panel. A panel tier of an `express: auto` mode may also
 * take the express lane on an easy prompt; that call seats the experience row, listed under `experience`.
 */
export function seatingNow(config: ModeConfig, ctx: SeatingContext): TierSeating[] {
  return tiersOf(config).flatMap((tier): TierSeating[] => {
    const lane = laneFor(config, tier, { lane: 'panel' });
    // An express-only mode seats the experience row at every tier: listed once.
    if (lane === 'express' && tier !== 'experience') return [];
    const seating = seatingFor(config, tier, lane, ctx);
    const staff = lane === 'panel' ? [seating.judge, seating.synthesis] : [];
    const chains = [...seating.seats, ...staff].flatMap((s) => s.chain);
    return [
      {
        tier,
        lane,
        seats: seating.seats.map((s) => ({ role: s.role, ...seated(s) })),
        judge: lane === 'panel' ? seated(seating.judge) : null,
        synthesis: lane === 'panel' ? seated(seating.synthesis) : null,
        families: [...new Set(chains.map((e) => ctx.find(e.engineId)?.family ?? e.engineId.split('/')[0]))],
      },
    ];
  });
}

/** Real engines of the design a simulated engine would answer for now (none in production, where no stand-in runs). */
export function simulatedFor(seating: readonly TierSeating[]): string[] {
  const places = seating.flatMap((t) => [...t.seats, ...(t.judge ? [t.judge] : []), ...(t.synthesis ? [t.synthesis] : [])]);
  return [
    ...new Set(places.filter((p) => !isSimEngine(p.designed) && p.answers !== null && isSimEngine(p.answers)).map((p) => p.designed)),
  ];
}
