import type { ObservedStageTimes } from '../../domain/retry-after';
import type { Tier } from '../../domain/modes';
import type { DbOrTrx } from './shared';

/** Calls a mode's stage times are read from: recent enough to follow a change of engines, enough to steady a median. */
const RECENT_CALLS = 20;

/**
 * Medians of a mode's stages over its latest calls at a tier by keys of this mode (a test key's calls answer on `sim`
 * engines, whose times say nothing of real ones, and the other way round): one seat pass (its first start to its last
 * end, per round), one judgment (a receipt's judge latency is the sum over its rounds), the synthesis, and the rounds
 * run. A stage's time is over the calls that ran it (the express lane runs no judge, a call its judge settled may skip
 * the synthesis): when a call is in that stage, or has it ahead, that is what it takes. A stage no recent call ran is
 * null (the spec's figure then stands in). One round trip; a 409's `Retry-After` reads it (domain/retry-after.ts).
 */
export async function observedStageTimes(
  db: DbOrTrx,
  input: { modeId: string; tier: Tier; keyKind: 'live' | 'test' },
): Promise<ObservedStageTimes> {
  const result = await db.raw(
    `with recent as (
       select x.request_id, x.outcome
         from receipts x
         join requests r on r.id = x.request_id
         left join api_keys k on k.id = r.api_key_id
        where x.mode_id = :modeId and x.tier = :tier and coalesce(k.mode, 'live') = :keyKind
        order by x.completed_at desc
        limit :limit),
     passes as (
       select extract(epoch from max(s.ended_at) - min(s.started_at)) * 1000 as ms
         from receipt_seats s join recent on recent.request_id = s.request_id
        group by s.request_id, s.round_number)
     select (select percentile_cont(0.5) within group (order by ms) from passes) as seat_pass_ms,
            percentile_cont(0.5) within group (
              order by (outcome#>>'{staff,judge,latencyMs}')::float8 / greatest((outcome->>'rounds')::float8, 1)) as judge_ms,
            percentile_cont(0.5) within group (order by (outcome#>>'{staff,synthesis,latencyMs}')::float8) as synthesis_ms,
            percentile_cont(0.5) within group (order by (outcome->>'rounds')::float8) as rounds
       from recent`,
    { ...input, limit: RECENT_CALLS },
  );
  const row = (result as { rows: Record<'seat_pass_ms' | 'judge_ms' | 'synthesis_ms' | 'rounds', number | null>[] }).rows[0];
  return { seatPassMs: row.seat_pass_ms, judgeMs: row.judge_ms, synthesisMs: row.synthesis_ms, rounds: row.rounds };
}
