import type { Knex } from 'knex';

/**
 * People and the console (DESIGN §14): accounts that sign in with an email and an argon2id password hash, their
 * memberships of organisations (one owner, any members: the "team" of spec 01's `:LAB` rule), invitations by link
 * (only a hash of the token is kept), server-side sessions (only a hash of the cookie's token is kept), and sign-in
 * attempts for rate limiting.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('people', (t) => {
    t.text('id').primary();
    t.text('email').notNullable();
    t.text('name').notNullable();
    t.text('password_hash').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('create unique index people_email_uq on people (lower(email))');
  await knex.schema.createTable('memberships', (t) => {
    t.text('person_id').notNullable().references('people.id').onDelete('CASCADE');
    t.text('org_id').notNullable().references('organisations.id').onDelete('CASCADE');
    t.text('role').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['person_id', 'org_id']);
    t.check("role in ('owner','member')", [], 'memberships_role_check');
  });
  await knex.raw("create unique index memberships_one_owner on memberships (org_id) where role = 'owner'");
  await knex.schema.createTable('invitations', (t) => {
    t.text('token_hash').primary();
    t.text('org_id').notNullable().references('organisations.id').onDelete('CASCADE');
    t.text('email').notNullable();
    t.text('invited_by').references('people.id').onDelete('SET NULL');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('accepted_at', { useTz: true });
    t.text('accepted_by').references('people.id').onDelete('SET NULL');
    t.index(['org_id']);
  });
  await knex.schema.createTable('sessions', (t) => {
    t.text('token_hash').primary();
    t.text('person_id').notNullable().references('people.id').onDelete('CASCADE');
    // The organisation the console is showing; null until the person belongs to one.
    t.text('org_id').references('organisations.id').onDelete('SET NULL');
    t.text('csrf_token').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_seen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.index(['person_id']);
  });
  await knex.schema.createTable('sign_in_attempts', (t) => {
    t.bigIncrements('id');
    t.text('email').notNullable();
    t.text('ip').notNullable();
    t.boolean('succeeded').notNullable();
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['email', 'at']);
    t.index(['ip', 'at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['sign_in_attempts', 'sessions', 'invitations', 'memberships', 'people']) await knex.schema.dropTable(table);
}
