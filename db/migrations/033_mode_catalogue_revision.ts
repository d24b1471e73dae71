import type { Knex } from 'knex';

/**
 * Issue 42 item 1: the mode catalogue's revision, one number that every change to `modes` or `mode_versions` moves
 * (a statement trigger, so no writer can forget it). The key's statement reads it with the key, so an API process may
 * serve a mode it found at that revision without asking again (operations/mode-cache.ts).
 */
const TABLES = ['modes', 'mode_versions'] as const;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table mode_catalogue (
      one boolean primary key default true check (one),
      revision bigint not null
    );
    insert into mode_catalogue (revision) values (0);
    create function bump_mode_catalogue() returns trigger language plpgsql as $$
    begin
      update mode_catalogue set revision = revision + 1;
      return null;
    end $$;
  `);
  for (const table of TABLES) {
    await knex.raw(`
      create trigger ${table}_catalogue after insert or update or delete on ${table}
        for each statement execute function bump_mode_catalogue();
      create trigger ${table}_catalogue_truncate after truncate on ${table}
        for each statement execute function bump_mode_catalogue();
    `);
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const table of TABLES)
    await knex.raw(`drop trigger ${table}_catalogue on ${table}; drop trigger ${table}_catalogue_truncate on ${table}`);
  await knex.raw('drop function bump_mode_catalogue(); drop table mode_catalogue');
}
