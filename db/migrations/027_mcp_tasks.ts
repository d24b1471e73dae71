import type { Knex } from 'knex';

/**
 * MCP tasks (issue 40 item 5, protocol 2025-11-25): a task-augmented `deliberate`, `run_test` or `certify_mode` call,
 * one row per task, read only within the organisation that created it. The work's own record stays the source of
 * truth (the deliberation's request and receipt, the run's row and workflow): the row names it (`workflow_id`, and
 * a deliberation's `request_id` and `idempotency_key`, a run's `batch_id`) and the task's status once it ended. `result` keeps
 * the plain call's result (a CallToolResult) only where it holds no transcript: an error, a run's launch. A deliberation's
 * answer is read from its receipt, so the receipt's retention and deletion hold for it too (`replayed`: the call was
 * a replay, which the plain call answers in the replay's shape). `expires_at` is creation plus the task's ttl; past it the task is not found.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('mcp_tasks', (t) => {
    t.text('task_id').primary();
    t.text('org_id').notNullable();
    t.text('api_key_id').notNullable();
    t.text('tool').notNullable();
    t.text('workflow_id');
    t.text('request_id');
    t.text('idempotency_key');
    t.boolean('replayed').notNullable().defaultTo(false);
    t.text('batch_id');
    t.text('status').notNullable();
    t.text('status_message');
    t.jsonb('result');
    t.integer('ttl_ms').notNullable();
    t.integer('poll_interval_ms').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.index(['org_id', 'created_at']);
  });
  await knex.raw("alter table mcp_tasks add constraint mcp_tasks_tool_check check (tool in ('deliberate','run_test','certify_mode'))");
  await knex.raw(
    "alter table mcp_tasks add constraint mcp_tasks_status_check check (status in ('working','input_required','completed','failed','cancelled'))",
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('mcp_tasks');
}
