import { createDb, type Db } from '../../db/knex';
import { stack } from './stack';

/**
 * A database login to the test stack's Postgres with every grant but those `revoke` takes back (`ROLE` in it names
 * the login): a real failure of one read or write (a misconfigured grant), with nothing else broken.
 */
export async function limitedDb(role: string, revoke: string): Promise<Db> {
  const { db } = stack();
  await db.raw(
    `do $$ begin if not exists (select from pg_roles where rolname = '${role}') then create role ${role} login password 'x'; end if; end $$`,
  );
  await db.raw(`grant select, insert, update, delete on all tables in schema public to ${role}`);
  await db.raw(`grant usage, select on all sequences in schema public to ${role}`);
  await db.raw(`grant execute on all functions in schema public to ${role}`);
  await db.raw(revoke.replaceAll('ROLE', role));
  const url = new URL(stack().dbUrl);
  url.username = role;
  url.password = 'x';
  return createDb(url.toString(), 2);
}
