import type { Knex } from 'knex';
import { ADMIT as ADMIT_024 } from './024_openai_fields';

/**
 * Issue 42: the limits' own rows (each key's recent requests, each call's concurrency lease) are unlogged. Every
 * request writes them, and a commit that wrote only unlogged tables writes no WAL, so it does not wait for a WAL
 * flush (about 0.6 ms on this machine's disk, twice a completion: the lease taken and given back). What that trades:
 * after a Postgres crash both tables restart empty, so each key's window and each organisation's slots start afresh
 * (a minute's requests forgiven; calls still in flight no longer counted until they end). A clean restart keeps them.
 *
 * `admit_request` answers as before, with less work: the key's row is read locked first (its insert only on the key's
 * first request), and the hits, appended in time order under that lock, are trimmed by a binary search instead of an
 * unnest and a sort; a refusal that trimmed nothing writes nothing.
 */
const ADMIT = `
  create or replace function admit_request(p_key text, p_limit int, p_window_ms int, p_count int default 1)
  returns table (allowed boolean, retry_after_ms int, remaining int, reset_ms int)
  language plpgsql as $$
  declare
    v_window interval := make_interval(secs => p_window_ms / 1000.0);
    v_hits timestamptz[];
    v_now timestamptz;
    v_lo int := 1;
    v_hi int;
    v_mid int;
    v_n int;
  begin
    select r.hits into v_hits from rate_limit_log r where r.key_id = p_key for update;
    if not found then
      -- Another request of the key may insert it first: then this waits for its lock and reads what it wrote.
      insert into rate_limit_log as r (key_id, hits) values (p_key, '{}')
        on conflict (key_id) do update set hits = r.hits returning r.hits into v_hits;
    end if;
    -- Read under the row's lock, so each hit appended is no earlier than the ones before it.
    v_now := clock_timestamp();
    -- The first hit still inside the window.
    v_hi := cardinality(v_hits) + 1;
    while v_lo < v_hi loop
      v_mid := (v_lo + v_hi) / 2;
      if v_hits[v_mid] > v_now - v_window then v_hi := v_mid; else v_lo := v_mid + 1; end if;
    end loop;
    v_hits := v_hits[v_lo:];
    v_n := cardinality(v_hits);
    if v_n + p_count <= p_limit then
      v_hits := v_hits || array_fill(v_now, array[p_count]);
      update rate_limit_log set hits = v_hits where key_id = p_key;
      return query select true, 0, p_limit - cardinality(v_hits), ${resetMs('v_hits')};
      return; -- \`return query\` only adds the row: this ends the call
    end if;
    if v_lo > 1 then
      update rate_limit_log set hits = v_hits where key_id = p_key;
    end if;
    if p_count > p_limit then
      -- More calls than the limit allows in any window: never admissible, so no wait would help.
      return query select false, -1, greatest(p_limit - v_n, 0), ${resetMs('v_hits')};
    else
      -- The places free as the oldest hits leave the window: the one that makes room for p_count calls.
      return query select false, ceil(extract(epoch from (v_hits[v_n + p_count - p_limit] + v_window - v_now)) * 1000)::int,
        greatest(p_limit - v_n, 0), ${resetMs('v_hits')};
    end if;
  end $$;
`;

/** Until the newest hit leaves the window: then the key has its whole limit again. */
function resetMs(hits: string): string {
  return `coalesce(ceil(extract(epoch from (${hits}[cardinality(${hits})] + v_window - v_now)) * 1000)::int, 0)`;
}

export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table rate_limit_log set unlogged');
  await knex.raw('alter table concurrency_leases set unlogged');
  await knex.raw(ADMIT);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table rate_limit_log set logged');
  await knex.raw('alter table concurrency_leases set logged');
  await knex.raw('drop function admit_request(text, int, int, int)');
  await knex.raw(ADMIT_024(true));
}
