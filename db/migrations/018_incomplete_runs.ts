import type { Knex } from 'knex';

/**
 * A run without the coverage its verdict needs ends `incomplete` (issue 26 item 8; DESIGN §12): no verdict, and
 * its unjudged questions credited back.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table runs drop constraint runs_state_check');
  await knex.raw(
    "alter table runs add constraint runs_state_check check (state in ('launching','queued','running','judging','completed','incomplete','failed','cancelled'))",
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw("update runs set state = 'completed' where state = 'incomplete'");
  await knex.raw('alter table runs drop constraint runs_state_check');
  await knex.raw(
    "alter table runs add constraint runs_state_check check (state in ('launching','queued','running','judging','completed','failed','cancelled'))",
  );
}
