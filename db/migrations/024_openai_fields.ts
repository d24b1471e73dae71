import type { Knex } from 'knex';

/**
 * Issue 40 items 4 and 7 (OpenAI's conventions):
 * - `requests.end_user` and `requests.metadata`: a chat completion's `user` and `metadata`, stored with the request
 *   and shown on its receipt;
 * - `admit_request` also says how many requests the key has left in the window and when the window is empty again,
 *   for the `x-ratelimit-remaining-requests` and `x-ratelimit-reset-requests` headers. The same one statement.
 */
export const ADMIT = (withState: boolean): string => `
    create function admit_request(p_key text, p_limit int, p_window_ms int, p_count int default 1)
    returns table (allowed boolean, retry_after_ms int${withState ? ', remaining int, reset_ms int' : ''})
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
        v_hits := v_hits || array_fill(v_now, array[p_count]);
        update rate_limit_log set hits = v_hits where key_id = p_key;
        return query select true, 0${withState ? ', p_limit - cardinality(v_hits), ' + RESET : ''};
      elsif p_count > p_limit then
        -- More calls than the limit allows in any window: never admissible, so no wait would help.
        update rate_limit_log set hits = v_hits where key_id = p_key;
        return query select false, -1${withState ? ', greatest(p_limit - cardinality(v_hits), 0), ' + RESET : ''};
      else
        update rate_limit_log set hits = v_hits where key_id = p_key;
        -- The places free as the oldest hits leave the window: the one that makes room for p_count calls.
        return query select false,
          ceil(extract(epoch from (v_hits[cardinality(v_hits) + p_count - p_limit] + v_window - v_now)) * 1000)::int${
            withState ? ', greatest(p_limit - cardinality(v_hits), 0), ' + RESET : ''
          };
      end if;
    end $$;
  `;
/** Until the newest hit leaves the window: then the key has its whole limit again (OpenAI's "resets to its initial state"). */
const RESET = `coalesce(ceil(extract(epoch from (v_hits[cardinality(v_hits)] + v_window - v_now)) * 1000)::int, 0)`;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('requests', (t) => {
    t.text('end_user');
    t.jsonb('metadata');
  });
  await knex.raw('drop function admit_request(text, int, int, int)');
  await knex.raw(ADMIT(true));
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop function admit_request(text, int, int, int)');
  await knex.raw(ADMIT(false));
  await knex.schema.alterTable('requests', (t) => {
    t.dropColumn('end_user');
    t.dropColumn('metadata');
  });
}
