import type { Knex } from 'knex';

/**
 * The OAuth 2.1 authorization server's state (DESIGN §15): every artifact `oidc-provider` persists (registered
 * clients, grants, authorization codes, access and refresh tokens, interactions, sessions) as one row per model and
 * id, and its keys (token signing and cookie signing), sealed with the service's secret box.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('oauth_records', (t) => {
    t.text('model').notNullable();
    t.text('id').notNullable();
    t.jsonb('payload').notNullable();
    // Revoking a grant removes every token issued under it in one statement.
    t.text('grant_id');
    t.text('uid');
    t.text('user_code');
    t.timestamp('expires_at', { useTz: true });
    t.timestamp('consumed_at', { useTz: true });
    t.primary(['model', 'id']);
  });
  await knex.raw('create index oauth_records_grant_idx on oauth_records (grant_id) where grant_id is not null');
  await knex.raw('create unique index oauth_records_uid_uq on oauth_records (model, uid) where uid is not null');
  await knex.raw('create unique index oauth_records_user_code_uq on oauth_records (model, user_code) where user_code is not null');
  await knex.raw('create index oauth_records_expiry_idx on oauth_records (expires_at) where expires_at is not null');

  await knex.schema.createTable('oauth_keys', (t) => {
    t.text('id').primary();
    t.text('purpose').notNullable();
    t.binary('ciphertext').notNullable();
    t.binary('iv').notNullable();
    t.binary('tag').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('retired_at', { useTz: true });
    t.check("purpose in ('signing','cookie')", [], 'oauth_keys_purpose_check');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('oauth_keys');
  await knex.schema.dropTable('oauth_records');
}
