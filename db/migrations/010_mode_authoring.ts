import type { Knex } from 'knex';

/**
 * Modes that organisations build (spec 02's mode builder): a mode has at most one draft (the spec its author last
 * saved, already compiled) and released versions that never change; `draft_revision` is the compare-and-swap a
 * release checks. A mode that was never released has `current_version` 0 and no version row, so only its lab
 * version can be called. Listing replaces the `listed` flag with its states; lab invitations and the price floor
 * get tables of their own.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('modes', (t) => {
    t.jsonb('draft_spec');
    t.jsonb('draft_config');
    t.text('draft_config_hash');
    t.integer('draft_revision').notNullable().defaultTo(0);
    t.timestamp('draft_saved_at', { useTz: true });
    t.text('listing_state');
    t.integer('listing_version');
    t.integer('listing_revision').notNullable().defaultTo(0);
    t.text('listing_note');
    t.check("listing_state in ('listed','rejected','delisted')", [], 'modes_listing_state_check');
  });
  await knex.raw("update modes set listing_state = 'listed', listing_version = current_version where listed");
  await knex.schema.alterTable('modes', (t) => {
    t.dropColumn('listed');
  });
  // The spec a released version was compiled from (null for modes seeded from code).
  await knex.schema.alterTable('mode_versions', (t) => {
    t.jsonb('spec');
  });
  // The COMPANY part of an organisation's tickers, fixed at its first mode.
  await knex.schema.alterTable('organisations', (t) => {
    t.text('ticker_prefix').unique();
  });
  await knex.schema.createTable('mode_lab_invites', (t) => {
    t.text('mode_id').notNullable().references('modes.id').onDelete('CASCADE');
    t.text('org_id').notNullable().references('organisations.id').onDelete('CASCADE');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['mode_id', 'org_id']);
  });
  // Operator settings read at request time (the price floor), so a change needs no restart.
  await knex.schema.createTable('platform_settings', (t) => {
    t.text('key').primary();
    t.jsonb('value').notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('platform_settings');
  await knex.schema.dropTable('mode_lab_invites');
  await knex.schema.alterTable('organisations', (t) => {
    t.dropColumn('ticker_prefix');
  });
  await knex.schema.alterTable('mode_versions', (t) => {
    t.dropColumn('spec');
  });
  await knex.schema.alterTable('modes', (t) => {
    t.boolean('listed').notNullable().defaultTo(false);
  });
  await knex.raw("update modes set listed = (listing_state = 'listed')");
  await knex.schema.alterTable('modes', (t) => {
    for (const c of [
      'draft_spec',
      'draft_config',
      'draft_config_hash',
      'draft_revision',
      'draft_saved_at',
      'listing_state',
      'listing_version',
      'listing_revision',
      'listing_note',
    ])
      t.dropColumn(c);
  });
}
