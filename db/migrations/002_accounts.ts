import type { Knex } from 'knex';

/**
 * Accounts and money (DESIGN §7–8): API keys, balances with an append-only ledger, reservations,
 * provider credentials, and the organisation's trial-credit bookkeeping.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('organisations', (t) => {
    t.bigInteger('trial_credit_micros').notNullable().defaultTo(0);
    t.timestamp('trial_started_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // Set once the `trial/{org_id}` workflow is known to exist; null rows are picked up by ensureTrialTimers.
    t.timestamp('trial_timer_started_at', { useTz: true });
    t.timestamp('trial_expired_at', { useTz: true });
  });

  await knex.schema.createTable('api_keys', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable().references('organisations.id').onDelete('CASCADE');
    t.text('key_hash').notNullable().unique();
    t.text('prefix').notNullable();
    t.text('last4').notNullable();
    t.text('mode').notNullable();
    t.specificType('scopes', 'text[]').notNullable();
    t.specificType('allowed_modes', 'text[]');
    // The organisation owner's key may configure bring-your-own provider keys.
    t.boolean('is_owner').notNullable().defaultTo(false);
    t.integer('requests_per_minute');
    t.integer('concurrency');
    t.integer('max_input_tokens');
    t.bigInteger('max_cost_micros');
    t.timestamp('revoked_at', { useTz: true });
    t.timestamp('expires_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['org_id']);
    t.check("mode in ('live','test')", [], 'api_keys_mode_check');
    t.check(
      '(requests_per_minute is null or requests_per_minute > 0) and (concurrency is null or concurrency > 0)' +
        ' and (max_input_tokens is null or max_input_tokens > 0) and (max_cost_micros is null or max_cost_micros > 0)',
      [],
      'api_keys_limits_check',
    );
  });

  await knex.schema.createTable('balances', (t) => {
    t.text('org_id').primary().references('organisations.id').onDelete('CASCADE');
    t.bigInteger('balance_micros').notNullable().defaultTo(0);
    t.bigInteger('reserved_micros').notNullable().defaultTo(0);
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // The database itself refuses an overspend, whatever the application code does.
    t.check('reserved_micros >= 0 and reserved_micros <= balance_micros', [], 'balances_no_overspend_check');
  });

  await knex.schema.createTable('ledger_entries', (t) => {
    t.bigIncrements('id');
    t.text('org_id').notNullable().references('organisations.id').onDelete('CASCADE');
    t.text('kind').notNullable();
    // Effect on balance_micros; the sum over an organisation's entries equals its balance.
    t.bigInteger('amount_micros').notNullable();
    // Effect on reserved_micros; the sum equals its reserved amount.
    t.bigInteger('reserved_delta_micros').notNullable().defaultTo(0);
    t.text('request_id');
    t.text('note');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['org_id', 'id']);
    t.check(
      "kind in ('top_up','trial_credit','trial_expiry','reservation','release','charge','cap_credit','test_run_charge')",
      [],
      'ledger_entries_kind_check',
    );
  });
  // One entry of each kind per request: a retried settle or release cannot write twice.
  await knex.raw(
    'create unique index ledger_entries_request_kind_uq on ledger_entries (org_id, request_id, kind) where request_id is not null',
  );
  await knex.raw(`
    create function ledger_entries_append_only() returns trigger language plpgsql as $$
    begin
      raise exception 'ledger_entries is append-only';
    end $$;
    create trigger ledger_entries_append_only before update or delete on ledger_entries
      for each row execute function ledger_entries_append_only();
  `);

  await knex.schema.createTable('reservations', (t) => {
    t.text('org_id').notNullable().references('organisations.id').onDelete('CASCADE');
    t.text('request_id').notNullable();
    t.bigInteger('amount_micros').notNullable();
    t.text('state').notNullable().defaultTo('held');
    t.bigInteger('charged_micros');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['org_id', 'request_id']);
    t.check("state in ('held','settled','released')", [], 'reservations_state_check');
    t.check('amount_micros >= 0', [], 'reservations_amount_check');
  });

  await knex.schema.createTable('provider_credentials', (t) => {
    t.text('org_id').notNullable().references('organisations.id').onDelete('CASCADE');
    t.text('family').notNullable();
    // AES-256-GCM of the provider key (families with a key); bound to (org_id, family) as associated data.
    t.binary('ciphertext');
    t.binary('iv');
    t.binary('tag');
    // Bedrock: a role assumed per request; nothing secret is stored.
    t.text('role_arn');
    t.text('external_id');
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['org_id', 'family']);
    t.check(
      "(family in ('openai','anthropic','google') and ciphertext is not null and iv is not null and tag is not null and role_arn is null)" +
        " or (family = 'bedrock' and role_arn is not null and external_id is not null and ciphertext is null)",
      [],
      'provider_credentials_shape_check',
    );
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('provider_credentials');
  await knex.schema.dropTable('reservations');
  await knex.schema.dropTable('ledger_entries');
  await knex.raw('drop function ledger_entries_append_only()');
  await knex.schema.dropTable('balances');
  await knex.schema.dropTable('api_keys');
  await knex.schema.alterTable('organisations', (t) => {
    t.dropColumns('trial_credit_micros', 'trial_started_at', 'trial_timer_started_at', 'trial_expired_at');
  });
}
