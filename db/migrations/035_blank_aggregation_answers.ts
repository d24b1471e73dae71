import type { Knex } from 'knex';

/**
 * Issue 52: a receipt's `aggregation` names the answers its seats gave (a short text among them). A transcript
 * blanked under the organisation's retention (migration 030's `blank_transcript`) now empties those too: each seat's
 * ballot and the winner read nothing, each tally keeps its votes with its answer emptied. Every figure stays.
 */
const BLANK_TRANSCRIPT = (aggregation: boolean): string => `
  create or replace function blank_transcript(o jsonb, reason text) returns jsonb language sql stable as $$
    select o || jsonb_build_object(
      'answer', '',
      'bestSeatRationale', '',
      'contestedPassage', case when jsonb_typeof(o->'contestedPassage') = 'object'
                               then (o->'contestedPassage') || '{"quote":"","why":""}'::jsonb else o->'contestedPassage' end,
      'bestSeat', case when jsonb_typeof(o->'bestSeat') = 'object'
                       then (o->'bestSeat') || '{"content":""}'::jsonb else o->'bestSeat' end,
      'seatPasses', coalesce((select jsonb_agg(p || '{"content":""}'::jsonb order by i)
                                from jsonb_array_elements(o->'seatPasses') with ordinality as s(p, i)), '[]'::jsonb),
      'transcriptDeleted', jsonb_build_object('at', to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                                              'reason', reason))
    ${
      aggregation
        ? `|| case when jsonb_typeof(o->'aggregation') = 'object' then jsonb_build_object('aggregation', (o->'aggregation') || jsonb_build_object(
          'ballots', coalesce((select jsonb_agg(b || '{"answer":null}'::jsonb order by i)
                                 from jsonb_array_elements(o->'aggregation'->'ballots') with ordinality as x(b, i)), '[]'::jsonb),
          'votes', coalesce((select jsonb_agg(v || '{"answer":""}'::jsonb order by i)
                               from jsonb_array_elements(o->'aggregation'->'votes') with ordinality as y(v, i)), '[]'::jsonb),
          'winner', (o->'aggregation'->'winner') || '{"answer":null}'::jsonb))
        else '{}'::jsonb end`
        : ''
    }
  $$`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(BLANK_TRANSCRIPT(true));
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(BLANK_TRANSCRIPT(false));
}
