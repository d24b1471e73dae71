import type { Knex } from 'knex';

/**
 * "60 requests per minute" means at most 60 in any 60 s, not per clock minute (a fixed window let 120 through
 * across a boundary). Each key keeps the times of its admitted requests in the current window; one function call
 * admits or refuses a request under the row's lock, so the limit holds across every API process.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('rate_limit_log', (t) => {
    t.text('key_id').primary();
    t.specificType('hits', 'timestamptz[]').notNullable();
  });
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
        -- The next place frees when the oldest hit that keeps the window full leaves it.
        return query select false, ceil(extract(epoch from (v_hits[cardinality(v_hits) - p_limit + 1] + v_window - v_now)) * 1000)::int;
      end if;
    end $$;
  `);
  await knex.schema.dropTable('rate_limit_windows');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.createTable('rate_limit_windows', (t) => {
    t.text('key_id').notNullable();
    t.timestamp('window_start', { useTz: true }).notNullable();
    t.integer('count').notNullable();
    t.primary(['key_id', 'window_start']);
  });
  await knex.raw('drop function admit_request(text, int, int)');
  await knex.schema.dropTable('rate_limit_log');
}
