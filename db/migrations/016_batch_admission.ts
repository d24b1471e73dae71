import type { Knex } from 'knex';

/**
 * A JSON-RPC batch on `/mcp` is as many requests as it carries calls (issue 26 item 14): `admit_request` takes a
 * count and admits all of them or none, so a batch can neither slip past the key's limit nor use up part of it when
 * refused. One function replaces the three-argument one (an overload with a default would make a three-argument call
 * ambiguous).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('drop function admit_request(text, int, int)');
  await knex.raw(`
    create function admit_request(p_key text, p_limit int, p_window_ms int, p_count int default 1)
    returns table (allowed boolean, retry_after_ms int)
    language plpgsql as $$
    declare
      v_now timestamptz := clock_timestamp();
      v_window interval := make_interval(secs => p_window_ms / 1000.0);
      v_hits timestamptz[];
    begin
      insert into rate_limit_log (key_id, hits) values (p_key, '{}') on conflict (key_id) do nothing;
      select array(select h from unnest(r.hits) h where h > v_now - v_window order by h) into v_hits
        from rate_limit_log r where r.key_id = p_key for update;
      if cardinality(v_hits) + p_count <= p_limit then
        update rate_limit_log set hits = v_hits || array_fill(v_now, array[p_count]) where key_id = p_key;
        return query select true, 0;
      elsif p_count > p_limit then
        -- More calls than the limit allows in any window: never admissible, so no wait would help.
        update rate_limit_log set hits = v_hits where key_id = p_key;
        return query select false, -1;
      else
        update rate_limit_log set hits = v_hits where key_id = p_key;
        -- The places free as the oldest hits leave the window: the one that makes room for p_count calls.
        return query select false,
          ceil(extract(epoch from (v_hits[cardinality(v_hits) + p_count - p_limit] + v_window - v_now)) * 1000)::int;
      end if;
    end $$;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop function admit_request(text, int, int, int)');
  await knex.raw(`
    create function admit_request(p_key text, p_limit int, p_window_ms int) returns table (allowed boolean, retry_after_ms int)
    language plpgsql as $$
    declare
      v_now timestamptz := clock_timestamp();
      v_window interval := make_interval(secs => p_window_ms / 1000.0);
      v_hits timestamptz[];
    begin
      insert into rate_limit_log (key_id, hits) values (p_key, '{}') on conflict (key_id) do nothing;
      select array(select h from unnest(r.hits) h where h > v_now - v_window order by h) into v_hits
        from rate_limit_log r where r.key_id = p_key for update;
      if cardinality(v_hits) < p_limit then
        update rate_limit_log set hits = v_hits || v_now where key_id = p_key;
        return query select true, 0;
      else
        update rate_limit_log set hits = v_hits where key_id = p_key;
        return query select false, ceil(extract(epoch from (v_hits[cardinality(v_hits) - p_limit + 1] + v_window - v_now)) * 1000)::int;
      end if;
    end $$;
  `);
}
