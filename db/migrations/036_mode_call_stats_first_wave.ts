import type { Knex } from 'knex';

/**
 * Issue 52: a first wave's share of calls that asked every seat, kept beside the recorded fee rate in
 * `mode_call_stats` (one row per mode configuration and tier, migration 031) so an estimate reads it in the same row.
 * `wave_calls`: the counted calls whose receipt says how many seats round 1 asked (`outcome.aggregation.seatsAsked`, a
 * panel call of a mode with `aggregation`); `wave_all_asked`: those of them that asked every seat (no early stop). The
 * configuration is the row's key, so whether it has a first wave is the row's, not the call's: an estimate reads the
 * two only for a configuration with `aggregation.firstWave`. Counted with the table's rule (live API keys, not paid by
 * a plan); this fills them from the receipts already written.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table mode_call_stats
      add column wave_calls integer not null default 0,
      add column wave_all_asked integer not null default 0;
    update mode_call_stats s
       set wave_calls = w.wave_calls, wave_all_asked = w.wave_all_asked
      from (select x.mode_id, x.config_hash, x.tier,
                   count(*) filter (where jsonb_typeof(x.outcome->'aggregation'->'seatsAsked') = 'number') as wave_calls,
                   count(*) filter (where jsonb_typeof(x.outcome->'aggregation'->'seatsAsked') = 'number'
                                      and (x.outcome->'aggregation'->>'earlyStop')::boolean is not true) as wave_all_asked
              from receipts x join requests r on r.id = x.request_id join api_keys k on k.id = r.api_key_id
             where k.mode = 'live' and x.outcome->>'payer' is distinct from 'plan'
             group by x.mode_id, x.config_hash, x.tier) w
     where s.mode_id = w.mode_id and s.config_hash = w.config_hash and s.tier = w.tier`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table mode_call_stats drop column wave_calls, drop column wave_all_asked');
}
